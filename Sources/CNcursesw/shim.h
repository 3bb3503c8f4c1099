/* SwiftPM drops pkg-config's -D_XOPEN_SOURCE=600, which hides the wide-character API; ask for it here. */
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include <locale.h>
#include <ncursesw/curses.h>
