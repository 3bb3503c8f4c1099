#include "CAudioShim.h"
#if defined(__linux__)
#include <alsa/asoundlib.h>
static void parley_alsa_silent(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
void parley_audio_quiet_alsa(void) { snd_lib_error_set_handler(parley_alsa_silent); }
#else
void parley_audio_quiet_alsa(void) {}
#endif
