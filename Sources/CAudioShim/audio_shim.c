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

/* ---- The session's scheduling group ------------------------------------------------------------------------- */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t group_raised = 0;
static volatile int group_previous = 0;

static int write_group_nice(int nice) {
    char text[16];
    int length = 0;
    /* By hand rather than snprintf: this also runs from a signal handler. */
    unsigned value = nice < 0 ? (unsigned)(-nice) : (unsigned)nice;
    char digits[12];
    int count = 0;
    do { digits[count++] = (char)('0' + value % 10); value /= 10; } while (value > 0 && count < 11);
    if (nice < 0) text[length++] = '-';
    while (count > 0) text[length++] = digits[--count];
    text[length++] = '\n';
    int fd = open("/proc/self/autogroup", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t written = write(fd, text, (size_t)length);
    int saved = errno;
    close(fd);
    errno = saved;
    return written == length ? 0 : -1;
}

int parley_session_group_nice(int *nice) {
#if defined(__linux__)
    /* "/autogroup-123 nice 0" */
    FILE *file = fopen("/proc/self/autogroup", "re");
    if (file == NULL) { errno = ENOENT; return -1; }
    int read = fscanf(file, "/autogroup-%*d nice %d", nice);
    fclose(file);
    if (read != 1) { errno = ENOENT; return -1; }
    return 0;
#else
    (void)nice;
    errno = ENOENT;
    return -1;
#endif
}

int parley_session_group_raise(int nice) {
#if defined(__linux__)
    int previous = 0;
    if (parley_session_group_nice(&previous) != 0) return INT32_MIN;
    if (previous <= nice) return previous;
    if (write_group_nice(nice) != 0) return INT32_MIN;
    static int registered = 0;
    if (!registered) {
        registered = 1;
        atexit(parley_session_group_restore);
    }
    if (!group_raised) {
        group_previous = previous;
        group_raised = 1;
    }
    return previous;
#else
    (void)nice;
    errno = ENOSYS;
    return INT32_MIN;
#endif
}

void parley_session_group_restore(void) {
    if (!group_raised) return;
    group_raised = 0;
    (void)write_group_nice(group_previous);
}
