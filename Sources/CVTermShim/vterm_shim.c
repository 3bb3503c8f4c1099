#define _GNU_SOURCE
#include "vterm_shim.h"

#include <stdlib.h>
#include <string.h>
#include <vterm.h>

#define PARLEY_VTERM_REPLY_LIMIT 65536

struct ParleyVTerm {
    VTerm *vt;
    VTermScreen *screen;
    int cursor_visible;
    char title[256];
    char replies[PARLEY_VTERM_REPLY_LIMIT];
    size_t reply_length;
    size_t replies_dropped;
};

static void on_output(const char *bytes, size_t length, void *user) {
    ParleyVTerm *term = user;
    size_t room = PARLEY_VTERM_REPLY_LIMIT - term->reply_length;
    size_t taken = length < room ? length : room;
    memcpy(term->replies + term->reply_length, bytes, taken);
    term->reply_length += taken;
    term->replies_dropped += length - taken;
}

static int on_settermprop(VTermProp prop, VTermValue *value, void *user) {
    ParleyVTerm *term = user;
    switch (prop) {
    case VTERM_PROP_CURSORVISIBLE:
        term->cursor_visible = value->boolean;
        return 1;
    case VTERM_PROP_TITLE:
        if (value->string) {
            strncpy(term->title, value->string, sizeof term->title - 1);
            term->title[sizeof term->title - 1] = 0;
        }
        return 1;
    default:
        return 0;
    }
}

static const VTermScreenCallbacks callbacks = {.settermprop = on_settermprop};

ParleyVTerm *parley_vterm_new(int rows, int cols) {
    ParleyVTerm *term = calloc(1, sizeof *term);
    if (!term) return NULL;
    term->vt = vterm_new(rows, cols);
    if (!term->vt) {
        free(term);
        return NULL;
    }
    term->cursor_visible = 1;
    vterm_set_utf8(term->vt, 1);
    vterm_output_set_callback(term->vt, on_output, term);
    term->screen = vterm_obtain_screen(term->vt);
    vterm_screen_set_callbacks(term->screen, &callbacks, term);
    vterm_screen_enable_altscreen(term->screen, 1);
    vterm_screen_reset(term->screen, 1);
    return term;
}

void parley_vterm_free(ParleyVTerm *term) {
    if (!term) return;
    vterm_free(term->vt);
    free(term);
}

size_t parley_vterm_write(ParleyVTerm *term, const char *bytes, size_t length) {
    size_t taken = vterm_input_write(term->vt, bytes, length);
    vterm_screen_flush_damage(term->screen);
    return taken;
}

void parley_vterm_resize(ParleyVTerm *term, int rows, int cols) { vterm_set_size(term->vt, rows, cols); }

static void flatten_color(const VTermScreen *screen, VTermColor color, int is_fg, int *kind, uint32_t *value) {
    if ((is_fg && VTERM_COLOR_IS_DEFAULT_FG(&color)) || (!is_fg && VTERM_COLOR_IS_DEFAULT_BG(&color))) {
        *kind = PARLEY_VTERM_COLOR_DEFAULT;
        *value = 0;
    } else if (VTERM_COLOR_IS_INDEXED(&color)) {
        *kind = PARLEY_VTERM_COLOR_INDEXED;
        *value = color.indexed.idx;
    } else {
        *kind = PARLEY_VTERM_COLOR_RGB;
        *value = ((uint32_t)color.rgb.red << 16) | ((uint32_t)color.rgb.green << 8) | color.rgb.blue;
    }
    (void)screen;
}

int parley_vterm_cell(ParleyVTerm *term, int row, int col, ParleyVTermCell *cell) {
    int rows, cols;
    vterm_get_size(term->vt, &rows, &cols);
    if (row < 0 || col < 0 || row >= rows || col >= cols) return 0;
    VTermScreenCell source;
    VTermPos position = {.row = row, .col = col};
    if (!vterm_screen_get_cell(term->screen, position, &source)) return 0;
    memcpy(cell->chars, source.chars, sizeof cell->chars);
    cell->width = source.width;
    flatten_color(term->screen, source.fg, 1, &cell->fg_kind, &cell->fg);
    flatten_color(term->screen, source.bg, 0, &cell->bg_kind, &cell->bg);
    unsigned attributes = 0;
    if (source.attrs.bold) attributes |= PARLEY_VTERM_BOLD;
    if (source.attrs.underline == VTERM_UNDERLINE_DOUBLE) attributes |= PARLEY_VTERM_DOUBLE_UNDERLINE;
    else if (source.attrs.underline) attributes |= PARLEY_VTERM_UNDERLINE;
    if (source.attrs.italic) attributes |= PARLEY_VTERM_ITALIC;
    if (source.attrs.blink) attributes |= PARLEY_VTERM_BLINK;
    if (source.attrs.reverse) attributes |= PARLEY_VTERM_REVERSE;
    if (source.attrs.strike) attributes |= PARLEY_VTERM_STRIKE;
    cell->attributes = attributes;
    return 1;
}

void parley_vterm_cursor(ParleyVTerm *term, int *row, int *col, int *visible) {
    VTermPos position;
    vterm_state_get_cursorpos(vterm_obtain_state(term->vt), &position);
    *row = position.row;
    *col = position.col;
    *visible = term->cursor_visible;
}

size_t parley_vterm_take_replies(ParleyVTerm *term, char *buffer, size_t capacity) {
    size_t taken = term->reply_length < capacity ? term->reply_length : capacity;
    memcpy(buffer, term->replies, taken);
    memmove(term->replies, term->replies + taken, term->reply_length - taken);
    term->reply_length -= taken;
    return taken;
}

size_t parley_vterm_replies_dropped(const ParleyVTerm *term) { return term->replies_dropped; }

const char *parley_vterm_title(const ParleyVTerm *term) { return term->title; }

#include <errno.h>
#include <sys/ioctl.h>

int parley_pty_set_size(int fd, int rows, int cols) {
    struct winsize size = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    return ioctl(fd, TIOCSWINSZ, &size) == 0 ? 0 : errno;
}

int parley_terminal_get_size(int fd, int *rows, int *cols) {
    struct winsize size = {0};
    if (ioctl(fd, TIOCGWINSZ, &size) != 0) return errno;
    *rows = size.ws_row;
    *cols = size.ws_col;
    return 0;
}

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int parley_pty_open(char *name, size_t capacity) {
    int fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) return -errno;
    if (grantpt(fd) != 0 || unlockpt(fd) != 0 || ptsname_r(fd, name, capacity) != 0) {
        int error = errno;
        close(fd);
        return -error;
    }
    return fd;
}

#include <locale.h>
#include <pthread.h>
#include <wchar.h>

static locale_t utf8_locale = (locale_t)0;
static pthread_once_t utf8_once = PTHREAD_ONCE_INIT;

static void make_utf8_locale(void) { utf8_locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0); }

int parley_char_width(uint32_t character) {
    pthread_once(&utf8_once, make_utf8_locale);
    locale_t utf8 = utf8_locale;
    if (utf8 == (locale_t)0) return 1;
    locale_t before = uselocale(utf8);
    int width = wcwidth((wchar_t)character);
    uselocale(before);
    return width;
}
