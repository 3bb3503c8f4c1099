#include "CVPXShim.h"

vpx_codec_err_t parley_vpx_vp8_enc_init(vpx_codec_ctx_t *ctx, const vpx_codec_enc_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_enc_init(ctx, vpx_codec_vp8_cx(), cfg, flags);
}

vpx_codec_err_t parley_vpx_vp8_dec_init(vpx_codec_ctx_t *ctx, const vpx_codec_dec_cfg_t *cfg, vpx_codec_flags_t flags) {
    return vpx_codec_dec_init(ctx, vpx_codec_vp8_dx(), cfg, flags);
}

vpx_codec_err_t parley_vpx_vp8_enc_config_default(vpx_codec_enc_cfg_t *cfg) {
    return vpx_codec_enc_config_default(vpx_codec_vp8_cx(), cfg, 0);
}

vpx_codec_err_t parley_vpx_control_int(vpx_codec_ctx_t *ctx, int control_id, int value) {
    return vpx_codec_control_(ctx, control_id, value);
}
