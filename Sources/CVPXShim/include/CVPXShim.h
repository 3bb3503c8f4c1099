#ifndef PARLEY_VPX_SHIM_H
#define PARLEY_VPX_SHIM_H
#include <vpx/vpx_encoder.h>
#include <vpx/vpx_decoder.h>
#include <vpx/vp8cx.h>
#include <vpx/vp8dx.h>

/* vpx_codec_enc_init and vpx_codec_dec_init are macros over *_init_ver with ABI constants Swift cannot see. */
vpx_codec_err_t parley_vpx_vp8_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg, vpx_codec_flags_t flags);
vpx_codec_err_t parley_vpx_vp8_dec_init(vpx_codec_ctx_t *ctx, const vpx_codec_dec_cfg_t *cfg, vpx_codec_flags_t flags);
/* Default encoder configuration for VP8. */
vpx_codec_err_t parley_vpx_vp8_enc_config_default(vpx_codec_enc_cfg_t *cfg);
/* vpx_codec_control is a token-pasting macro; a plain int setter covers the VP8E_SET_* controls taking int. */
vpx_codec_err_t parley_vpx_control_int(vpx_codec_ctx_t *ctx, int control_id, int value);

#endif
