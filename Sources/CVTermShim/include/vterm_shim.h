#ifndef PARLEY_VTERM_SHIM_H
#define PARLEY_VTERM_SHIM_H
#include <stddef.h>
#include <stdint.h>

/* A terminal emulator (libvterm's screen layer) behind plain functions: libvterm's cell attributes are C bit-fields
   and its colours a tagged union, so a cell is copied out flattened. */
typedef struct ParleyVTerm ParleyVTerm;

/* Colour kinds in ParleyVTermCell's fg_kind and bg_kind. */
enum { PARLEY_VTERM_COLOR_DEFAULT = 0, PARLEY_VTERM_COLOR_INDEXED = 1, PARLEY_VTERM_COLOR_RGB = 2 };

/* Attribute bits in ParleyVTermCell's attributes. */
enum {
    PARLEY_VTERM_BOLD = 1,
    PARLEY_VTERM_UNDERLINE = 2,
    PARLEY_VTERM_DOUBLE_UNDERLINE = 4,
    PARLEY_VTERM_ITALIC = 8,
    PARLEY_VTERM_BLINK = 16,
    PARLEY_VTERM_REVERSE = 32,
    PARLEY_VTERM_STRIKE = 64,
};

typedef struct {
    /* The cell's characters (a base and its combining marks), 0-terminated when fewer than 6; chars[0] is
       0xFFFFFFFF on the right half of a wide character. */
    uint32_t chars[6];
    int width;
    int fg_kind, bg_kind;
    /* Indexed: the palette index; RGB: 0xRRGGBB. */
    uint32_t fg, bg;
    unsigned attributes;
} ParleyVTermCell;

ParleyVTerm *parley_vterm_new(int rows, int cols);
void parley_vterm_free(ParleyVTerm *term);
/* Feeds the program's output; returns the bytes taken. */
size_t parley_vterm_write(ParleyVTerm *term, const char *bytes, size_t length);
void parley_vterm_resize(ParleyVTerm *term, int rows, int cols);
/* 1 when the cell exists (0 <= row < rows, 0 <= col < cols). */
int parley_vterm_cell(ParleyVTerm *term, int row, int col, ParleyVTermCell *cell);
void parley_vterm_cursor(ParleyVTerm *term, int *row, int *col, int *visible);
/* Moves up to `capacity` bytes the terminal answered the program with (device attribute and status replies) into
   `buffer`; returns how many. At most 64 KiB wait; more is dropped and counted in `parley_vterm_replies_dropped`. */
size_t parley_vterm_take_replies(ParleyVTerm *term, char *buffer, size_t capacity);
size_t parley_vterm_replies_dropped(const ParleyVTerm *term);
/* The terminal's title (OSC 0/2) as last set, 0-terminated, at most 255 bytes. */
const char *parley_vterm_title(const ParleyVTerm *term);

/* The shared program's pseudo-terminal: ioctl is variadic, which Swift cannot call. 0 on success, else errno. */
int parley_pty_set_size(int fd, int rows, int cols);
/* The size of the terminal on `fd` (the sharer's own). 0 on success, else errno (ENOTTY when it is none). */
int parley_terminal_get_size(int fd, int *rows, int *cols);
/* Opens a pseudo-terminal's primary side (close-on-exec, not a controlling terminal), granted and unlocked, its
   other side's path in `name`; the descriptor, or -errno. posix_openpt and friends need _XOPEN_SOURCE, which Swift's
   Glibc module is not built with. */
int parley_pty_open(char *name, size_t capacity);
/* How many columns a terminal gives `character` (wcwidth in the C.UTF-8 locale, on this thread only): 2 for wide,
   1, 0 for a combining mark, -1 for a control character. */
int parley_char_width(uint32_t character);
#endif
