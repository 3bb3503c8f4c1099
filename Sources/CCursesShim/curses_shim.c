#include "CCursesShim.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

int parley_curses_lines(void) { return LINES; }
int parley_curses_cols(void) { return COLS; }
int parley_curses_colors(void) { return COLORS; }
int parley_curses_color_pairs(void) { return COLOR_PAIRS; }
WINDOW *parley_curses_stdscr(void) { return stdscr; }

attr_t parley_curses_a_normal(void) { return A_NORMAL; }
attr_t parley_curses_a_bold(void) { return A_BOLD; }
attr_t parley_curses_a_dim(void) { return A_DIM; }
attr_t parley_curses_a_reverse(void) { return A_REVERSE; }
attr_t parley_curses_a_underline(void) { return A_UNDERLINE; }
mmask_t parley_curses_button1_clicked(void) { return BUTTON1_CLICKED; }
mmask_t parley_curses_button1_double_clicked(void) { return BUTTON1_DOUBLE_CLICKED; }
mmask_t parley_curses_button1_pressed(void) { return BUTTON1_PRESSED; }
mmask_t parley_curses_button1_released(void) { return BUTTON1_RELEASED; }
mmask_t parley_curses_button4_pressed(void) { return BUTTON4_PRESSED; }
mmask_t parley_curses_button5_pressed(void) { return BUTTON5_PRESSED; }
mmask_t parley_curses_all_mouse_events(void) { return ALL_MOUSE_EVENTS; }

int parley_curses_put_wch(WINDOW *win, int y, int x, wchar_t ch, attr_t attrs, int pair) {
    wchar_t text[1] = { ch };
    return parley_curses_put_cluster(win, y, x, text, 1, attrs, pair);
}

int parley_curses_put_cluster(WINDOW *win, int y, int x, const wchar_t *text, int count, attr_t attrs, int pair) {
    cchar_t cell;
    wchar_t buffer[CCHARW_MAX + 1];
    int n = count < CCHARW_MAX ? count : CCHARW_MAX;
    memcpy(buffer, text, (size_t)n * sizeof(wchar_t));
    buffer[n] = 0;
    int p = pair;
    /* The short argument is ignored when `opts` points at the int pair: that is how pairs above 32767 get through. */
    if (setcchar(&cell, buffer, attrs, (short)(pair > 32767 ? 0 : pair), &p) != OK) {
        return ERR;
    }
    return mvwadd_wch(win, y, x, &cell);
}

int parley_curses_put_run(WINDOW *win, int y, int x, const wchar_t *chars, const attr_t *attrs, const int *pairs,
                          int count) {
    cchar_t buffer[256];
    int done = 0;
    while (done < count) {
        int n = count - done > 256 ? 256 : count - done;
        memset(buffer, 0, sizeof(cchar_t) * (size_t)n);
        for (int i = 0; i < n; i++) {
            int pair = pairs[done + i];
            /* What setcchar does: the pair goes in ext_color, and (capped at 255) in the attribute's colour bits. */
            buffer[i].attr = (attrs[done + i] & ~A_COLOR) | (attr_t)COLOR_PAIR(pair > 255 ? 255 : pair);
            buffer[i].chars[0] = chars[done + i];
            buffer[i].ext_color = pair;
        }
        if (mvwadd_wchnstr(win, y, x + done, buffer, n) == ERR) return ERR;
        done += n;
    }
    return OK;
}

const char *parley_curses_string_capability(const char *name) {
    const char *value = tigetstr(name);
    return (value == NULL || value == (char *)-1) ? NULL : value;
}

int parley_curses_flag_capability(const char *name) {
    return tigetflag(name) > 0;
}

const char *parley_curses_tiparm1(const char *capability, int a) {
    return capability == NULL ? NULL : tiparm(capability, a);
}

const char *parley_curses_tiparm2(const char *capability, int a, int b) {
    return capability == NULL ? NULL : tiparm(capability, a, b);
}

void parley_curses_assume_normal_attributes(void) {
    vid_attr(A_NORMAL, 0, NULL);
}

int parley_terminal_size(int fd, int *columns, int *rows) {
    struct winsize size;
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return -1;
    *columns = size.ws_col;
    *rows = size.ws_row;
    return 0;
}

SCREEN *parley_curses_newterm(const char *term) {
    return newterm(term, stdout, stdin);
}

void parley_curses_leave_initial_state(void) {
    endwin();
    doupdate();
}

/* ---- Restoration from signal handlers ---------------------------------------------------------------------- */

static int restore_fd = -1;
static struct termios saved_modes;
static int have_saved_modes = 0;
static char restore_bytes[512];
static size_t restore_length = 0;
static volatile sig_atomic_t restored = 0;
static volatile sig_atomic_t armed = 0;

static const int exit_signals[] = { SIGINT, SIGTERM, SIGHUP };
static const int crash_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE };
#define EXIT_COUNT (sizeof(exit_signals) / sizeof(exit_signals[0]))
#define CRASH_COUNT (sizeof(crash_signals) / sizeof(crash_signals[0]))
static struct sigaction previous_exit[EXIT_COUNT];
static struct sigaction previous_crash[CRASH_COUNT];

static void append_bytes(const char *bytes) {
    if (bytes == NULL || bytes == (char *)-1) return;
    size_t length = strlen(bytes);
    if (restore_length + length >= sizeof(restore_bytes)) return;
    memcpy(restore_bytes + restore_length, bytes, length);
    restore_length += length;
}

int parley_curses_save_tty(int fd) {
    if (tcgetattr(fd, &saved_modes) != 0) return -1;
    restore_fd = fd;
    have_saved_modes = 1;
    return 0;
}

/* Only async-signal-safe calls here: write(2) and tcsetattr(3). */
void parley_curses_restore_now(void) {
    if (restored) return;
    restored = 1;
    if (restore_fd < 0) return;
    size_t done = 0;
    while (done < restore_length) {
        ssize_t n = write(restore_fd, restore_bytes + done, restore_length - done);
        if (n <= 0) break;
        done += (size_t)n;
    }
    if (have_saved_modes) tcsetattr(restore_fd, TCSANOW, &saved_modes);
}

/* The audio shim's: a call raises its terminal session's scheduling group, which must not outlive it. Weak, so the
   terminal works in a program without the audio shim. */
extern void parley_session_group_restore(void) __attribute__((weak));

static void restore_session_group(void) {
    if (parley_session_group_restore) parley_session_group_restore();
}

static void on_exit_signal(int signal_number) {
    parley_curses_restore_now();
    restore_session_group();
    _exit(128 + signal_number);
}

static void on_crash_signal(int signal_number, siginfo_t *info, void *context) {
    parley_curses_restore_now();
    restore_session_group();
    for (size_t i = 0; i < CRASH_COUNT; i++) {
        if (crash_signals[i] != signal_number) continue;
        struct sigaction *previous = &previous_crash[i];
        if (previous->sa_flags & SA_SIGINFO) {
            if (previous->sa_sigaction != NULL) {
                previous->sa_sigaction(signal_number, info, context);
                return;
            }
        } else if (previous->sa_handler != SIG_DFL && previous->sa_handler != SIG_IGN) {
            previous->sa_handler(signal_number);
            return;
        }
    }
    /* Default action: reinstall it and let the signal happen again (a fault re-executes, a raise re-delivers). */
    signal(signal_number, SIG_DFL);
    raise(signal_number);
}

int parley_curses_arm_restore(void) {
    restore_length = 0;
    restored = 0;
    append_bytes(tigetstr("sgr0"));
    append_bytes(tigetstr("cnorm"));
    append_bytes(tigetstr("rmkx"));
    /* Mouse reporting off, every mode curses may have turned on (X10/normal, button-event, any-event, SGR). */
    append_bytes("\033[?1000l\033[?1002l\033[?1003l\033[?1006l");
    /* The alternate screen is cleared before it is left, as `Terminal.close` does: tmux rewraps what is on it into
       the shell's screen when it is left at another size. */
    const char *rmcup = tigetstr("rmcup");
    if (rmcup != NULL && rmcup != (char *)-1) append_bytes(tigetstr("clear"));
    append_bytes(rmcup);

    int status = 0;
    for (size_t i = 0; i < EXIT_COUNT; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_handler = on_exit_signal;
        sigfillset(&action.sa_mask);
        if (sigaction(exit_signals[i], &action, &previous_exit[i]) != 0) status = -1;
    }
    for (size_t i = 0; i < CRASH_COUNT; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = on_crash_signal;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        if (sigaction(crash_signals[i], &action, &previous_crash[i]) != 0) status = -1;
    }
    armed = 1;
    return status;
}

void parley_curses_disarm_restore(void) {
    if (!armed) return;
    armed = 0;
    for (size_t i = 0; i < EXIT_COUNT; i++) sigaction(exit_signals[i], &previous_exit[i], NULL);
    for (size_t i = 0; i < CRASH_COUNT; i++) sigaction(crash_signals[i], &previous_crash[i], NULL);
    restored = 1;
}
