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

#endif
