#define _GNU_SOURCE
#include "CAudioShim.h"
#include <stdlib.h>
#if defined(__linux__)
#include <alsa/asoundlib.h>
#include <dlfcn.h>
static void parley_alsa_silent(const char *file, int line, const char *function, int err, const char *fmt, ...) {
    (void)file; (void)line; (void)function; (void)err; (void)fmt;
}
void parley_audio_quiet_alsa(void) { snd_lib_error_set_handler(parley_alsa_silent); }

static void parley_jack_silent(const char *message) { (void)message; }
typedef void (*parley_jack_setter)(void (*)(const char *));
void parley_audio_quiet_jack(void) {
    setenv("JACK_NO_START_SERVER", "1", 0);
    // libjack is a dependency of Debian's libportaudio, not of Parley: look it up instead of linking it.
    parley_jack_setter set_error = (parley_jack_setter)dlsym(RTLD_DEFAULT, "jack_set_error_function");
    parley_jack_setter set_info = (parley_jack_setter)dlsym(RTLD_DEFAULT, "jack_set_info_function");
    if (set_error) set_error(parley_jack_silent);
    if (set_info) set_info(parley_jack_silent);
}
#else
void parley_audio_quiet_alsa(void) {}
void parley_audio_quiet_jack(void) {}
#endif
