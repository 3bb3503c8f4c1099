#include "COpusShim.h"

int parley_opus_encoder_set_int(OpusEncoder *enc, int request, opus_int32 value) {
    return opus_encoder_ctl(enc, request, value);
}

int parley_opus_encoder_get_int(OpusEncoder *enc, int request, opus_int32 *value) {
    return opus_encoder_ctl(enc, request, value);
}

int parley_opus_encoder_reset(OpusEncoder *enc) {
    return opus_encoder_ctl(enc, OPUS_RESET_STATE);
}

int parley_opus_decoder_set_int(OpusDecoder *dec, int request, opus_int32 value) {
    return opus_decoder_ctl(dec, request, value);
}

int parley_opus_decoder_get_int(OpusDecoder *dec, int request, opus_int32 *value) {
    return opus_decoder_ctl(dec, request, value);
}

int parley_opus_decoder_reset(OpusDecoder *dec) {
    return opus_decoder_ctl(dec, OPUS_RESET_STATE);
}
