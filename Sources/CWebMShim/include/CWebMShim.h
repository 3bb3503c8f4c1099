#ifndef PARLEY_WEBM_SHIM_H
#define PARLEY_WEBM_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* libwebm's muxer (mkvmuxer) is C++: Swift cannot construct its classes. This is a plain C face over one
   mkvmuxer::Segment writing to one file descriptor through a buffered, seekable writer. Every function returns 0 on
   success; on failure -1, and parley_webm_error() gives the errno of the write that failed (0 when the muxer itself
   refused, e.g. a timestamp going backwards). */
typedef struct parley_webm parley_webm;

/* Creates (truncates) the file at path; NULL with *error_out set to errno when it cannot be opened. */
parley_webm *parley_webm_open(const char *path, int *error_out);

/* Tracks, all before the first frame. Each returns the track number (1, 2, ...) or 0. */
uint64_t parley_webm_add_video_track(parley_webm *webm, int32_t width, int32_t height, const char *name);
uint64_t parley_webm_add_audio_track(parley_webm *webm, int32_t sample_rate, int32_t channels,
                                     const uint8_t *opus_head, size_t opus_head_length, uint64_t codec_delay_ns,
                                     const char *name);
uint64_t parley_webm_add_subtitle_track(parley_webm *webm, const char *name);

/* Sets a video track's picture size in its header; fails (-1) once the header is written (with the first frame) or
   when the track is not a video track. */
int parley_webm_set_video_size(parley_webm *webm, uint64_t track, int32_t width, int32_t height);

/* One frame (a SimpleBlock), timestamps in nanoseconds from the start, never going backwards across the file. */
int parley_webm_write_frame(parley_webm *webm, uint64_t track, const uint8_t *data, size_t length,
                            uint64_t timestamp_ns, int is_key);
/* One block with a duration (a WebVTT cue). */
int parley_webm_write_block(parley_webm *webm, uint64_t track, const uint8_t *data, size_t length,
                            uint64_t timestamp_ns, uint64_t duration_ns);

/* Ends the current cluster at the next frame, rewrites the header's duration and hands every buffered byte to the
   kernel: after this a kill -9 loses nothing written so far. */
int parley_webm_checkpoint(parley_webm *webm, double duration_ms);

/* Writes the cues, the seek head, the sizes and the duration. The file is complete after it. */
int parley_webm_finish(parley_webm *webm, double duration_ms);

/* The errno of the failed write, 0 if none. */
int parley_webm_error(const parley_webm *webm);
/* Bytes in the file so far (written or buffered). */
uint64_t parley_webm_size(const parley_webm *webm);
/* Tests: every write past this many bytes of file fails with ENOSPC, as on a full disk. */
void parley_webm_fail_after(parley_webm *webm, uint64_t bytes);

/* Writes out what is buffered, closes the file (finished or not) and frees everything. */
void parley_webm_close(parley_webm *webm);

#ifdef __cplusplus
}
#endif

#endif
