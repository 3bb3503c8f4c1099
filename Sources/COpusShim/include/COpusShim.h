#ifndef PARLEY_OPUS_SHIM_H
#define PARLEY_OPUS_SHIM_H
#include <opus/opus.h>

/* opus_encoder_ctl and opus_decoder_ctl are variadic; Swift cannot call them. One setter and one getter each. */
int parley_opus_encoder_set_int(OpusEncoder *enc, int request, opus_int32 value);
int parley_opus_encoder_get_int(OpusEncoder *enc, int request, opus_int32 *value);
int parley_opus_encoder_reset(OpusEncoder *enc);
int parley_opus_decoder_set_int(OpusDecoder *dec, int request, opus_int32 value);
int parley_opus_decoder_get_int(OpusDecoder *dec, int request, opus_int32 *value);
int parley_opus_decoder_reset(OpusDecoder *dec);

#endif
