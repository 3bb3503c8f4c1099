#ifndef PARLEY_CURSES_SHIM_H
#define PARLEY_CURSES_SHIM_H
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <ncursesw/curses.h>

/* C globals are errors in Swift 6 mode; read them through functions. */
int parley_curses_lines(void);
int parley_curses_cols(void);
int parley_curses_colors(void);
int parley_curses_color_pairs(void);
WINDOW *parley_curses_stdscr(void);

/* Attribute and mouse macros that do not import. */
attr_t parley_curses_a_normal(void);
attr_t parley_curses_a_bold(void);
attr_t parley_curses_a_dim(void);
attr_t parley_curses_a_reverse(void);
attr_t parley_curses_a_underline(void);
mmask_t parley_curses_button1_clicked(void);
mmask_t parley_curses_button1_double_clicked(void);
mmask_t parley_curses_button1_pressed(void);
mmask_t parley_curses_button1_released(void);
mmask_t parley_curses_button4_pressed(void);
mmask_t parley_curses_button5_pressed(void);
mmask_t parley_curses_all_mouse_events(void);

/* Writes one wide character with an extended colour pair (pairs above 32767 need the `opts` pointer). */
int parley_curses_put_wch(WINDOW *win, int y, int x, wchar_t ch, attr_t attrs, int pair);

/* Writes one grapheme cluster (up to CCHARW_MAX wide characters: a base plus combining or joining characters). */
int parley_curses_put_cluster(WINDOW *win, int y, int x, const wchar_t *text, int count, attr_t attrs, int pair);

/*
 * Writes `count` cells of one character each (narrow, no combining characters) from column x of row y with one
 * mvwadd_wchnstr call per 256 cells: much cheaper than a setcchar + mvwadd_wch per cell. Pairs above 32767 work.
 */
int parley_curses_put_run(WINDOW *win, int y, int x, const wchar_t *chars, const attr_t *attrs, const int *pairs,
                          int count);

/*
 * Terminfo strings for writing picture cells straight to the terminal (see `PictureOutput` in ParleyTUI).
 * `parley_curses_string_capability` returns NULL when the terminal lacks the capability. The tiparm wrappers
 * exist because tiparm is variadic, which Swift cannot call; they return NULL on failure.
 */
const char *parley_curses_string_capability(const char *name);
/* 1 when the terminal has the boolean capability (e.g. "RGB", "Tc"), else 0. */
int parley_curses_flag_capability(const char *name);
const char *parley_curses_tiparm1(const char *capability, int a);
const char *parley_curses_tiparm2(const char *capability, int a, int b);
/* Makes curses' idea of the terminal's current attributes "normal" (emitting sgr0 only if it thought otherwise). */
void parley_curses_assume_normal_attributes(void);

/* The terminal's size as the kernel knows it now (TIOCGWINSZ on fd): 0 and both set, or -1. Curses learns of a
   resize only at its next read; this tells whether one is pending. */
int parley_terminal_size(int fd, int *columns, int *rows);

/* newterm(term, stdout, stdin): `stdout`/`stdin` are C globals Swift 6 cannot read. NULL term means $TERM. */
SCREEN *parley_curses_newterm(const char *term);
/* endwin() then doupdate(), once, right after newterm. Why: until a screen has been suspended and resumed, ncurses
 * 6.x keeps it in its "initial" state, and in that state its internal cursor movement flushes the output buffer
 * after every jump, so one screen update became dozens of small writes (a call's border changes: ~130 writes a
 * second, each waking the terminal). Suspending and resuming moves the screen to "running", where an update is one
 * write. Nothing has been drawn yet, so the terminal only sees the alternate screen left and entered again. */
void parley_curses_leave_initial_state(void);

/*
 * Terminal restoration from signal handlers.
 *
 * `parley_curses_save_tty` records the terminal modes of `fd` before curses changes them. `parley_curses_arm_restore`
 * (called after newterm) builds the byte sequence that undoes curses' screen setup from terminfo (attributes off,
 * cursor visible, keypad and mouse reporting off, clear and leave the alternate screen) and installs
 * async-signal-safe handlers: SIGINT, SIGTERM and SIGHUP write that sequence, restore the saved modes and
 * _exit(128 + signal); crash signals (SIGSEGV, SIGBUS, SIGILL, SIGTRAP, SIGABRT, SIGFPE) restore the same way and
 * then pass the signal on to the handler that was installed before (the Swift runtime's backtracer) or to the
 * default action.
 * `parley_curses_disarm_restore` puts the previous handlers back. Returns 0 on success, -1 when a call failed.
 */
int parley_curses_save_tty(int fd);
int parley_curses_arm_restore(void);
void parley_curses_disarm_restore(void);
/* Runs the signal-time restoration now (for tests of the sequence and for emergency paths). */
void parley_curses_restore_now(void);

#endif
