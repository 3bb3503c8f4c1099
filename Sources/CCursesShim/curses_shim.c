#include "CCursesShim.h"

int parley_curses_lines(void) { return LINES; }
int parley_curses_cols(void) { return COLS; }
int parley_curses_colors(void) { return COLORS; }
int parley_curses_color_pairs(void) { return COLOR_PAIRS; }

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
    cchar_t cell;
    wchar_t text[2] = { ch, 0 };
    int p = pair;
    if (setcchar(&cell, text, attrs, (short)(pair > 32767 ? 0 : pair), &p) != OK) {
        return ERR;
    }
    return mvwadd_wch(win, y, x, &cell);
}
