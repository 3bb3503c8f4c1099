// The C face of libwebm's muxer. The muxer's headers are not in Debian's libwebm-dev (only the parser's are), but
// libwebm.so exports the muxer: libwebm/ holds the headers of the same release (1.0.0.29), unchanged.
#include "CWebMShim.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <new>
#include <vector>

#include "mkvmuxer/mkvmuxer.h"

namespace {

// A seekable writer on a file descriptor with a user-space buffer: the muxer writes many small elements, and a
// checkpoint hands them to the kernel in one write. A failed write keeps its errno and fails every later one.
class FileWriter : public mkvmuxer::IMkvWriter {
  public:
    explicit FileWriter(int fd) : fd_(fd) {}
    ~FileWriter() override {}

    mkvmuxer::int32 Write(const void *buf, mkvmuxer::uint32 len) override {
        if (error_ != 0) return -1;
        const uint8_t *bytes = static_cast<const uint8_t *>(buf);
        pending_.insert(pending_.end(), bytes, bytes + len);
        if (pending_.size() >= kFlushBytes) return Flush();
        return 0;
    }

    mkvmuxer::int64 Position() const override { return offset_ + static_cast<int64_t>(pending_.size()); }

    mkvmuxer::int32 Position(mkvmuxer::int64 position) override {
        if (Flush() != 0) return -1;
        if (lseek(fd_, position, SEEK_SET) < 0) {
            error_ = errno;
            return -1;
        }
        offset_ = position;
        return 0;
    }

    bool Seekable() const override { return true; }
    void ElementStartNotify(mkvmuxer::uint64, mkvmuxer::int64) override {}

    int32_t Flush() {
        if (error_ != 0) return -1;
        size_t done = 0;
        while (done < pending_.size()) {
            size_t length = pending_.size() - done;
            const uint64_t end = static_cast<uint64_t>(offset_) + length;
            if (end > size_ && end > fail_after_) {
                // The injected full disk: what fits is written, the rest fails as write(2) would.
                const uint64_t room = fail_after_ > static_cast<uint64_t>(offset_) ? fail_after_ - offset_ : 0;
                if (room == 0) {
                    error_ = ENOSPC;
                    return -1;
                }
                if (length > room) length = static_cast<size_t>(room);
            }
            const ssize_t wrote = write(fd_, pending_.data() + done, length);
            if (wrote < 0) {
                if (errno == EINTR) continue;
                error_ = errno;
                return -1;
            }
            done += static_cast<size_t>(wrote);
            offset_ += wrote;
            if (static_cast<uint64_t>(offset_) > size_) size_ = offset_;
        }
        pending_.clear();
        return 0;
    }

    int error() const { return error_; }
    uint64_t size() const {
        const uint64_t end = static_cast<uint64_t>(Position());
        return end > size_ ? end : size_;
    }
    void fail_after(uint64_t bytes) { fail_after_ = bytes; }

  private:
    static const size_t kFlushBytes = 256 * 1024;
    int fd_;
    int64_t offset_ = 0;
    uint64_t size_ = 0;
    uint64_t fail_after_ = UINT64_MAX;
    int error_ = 0;
    std::vector<uint8_t> pending_;
};

}  // namespace

struct parley_webm {
    int fd;
    FileWriter writer;
    mkvmuxer::Segment segment;
    bool initialized = false;
    // The muxer writes the header (with the tracks' sizes) when the first frame comes.
    bool wrote_frame = false;

    explicit parley_webm(int descriptor) : fd(descriptor), writer(descriptor) {}
};

extern "C" {

parley_webm *parley_webm_open(const char *path, int *error_out) {
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (error_out) *error_out = errno;
        return nullptr;
    }
    parley_webm *webm = new (std::nothrow) parley_webm(fd);
    if (webm == nullptr || !webm->segment.Init(&webm->writer)) {
        if (error_out) *error_out = webm ? webm->writer.error() : ENOMEM;
        delete webm;
        close(fd);
        return nullptr;
    }
    webm->segment.set_mode(mkvmuxer::Segment::kFile);
    webm->segment.GetSegmentInfo()->set_writing_app("parley");
    webm->segment.GetSegmentInfo()->set_muxing_app("parley (libwebm mkvmuxer)");
    // Clusters close at least every second (checkpoints force it sooner), so a kill loses at most that much.
    webm->segment.set_max_cluster_duration(1000000000ULL);
    // The first frame opens a cluster whatever its track: otherwise the muxer holds audio back for a video
    // keyframe, and a recording stopped before one came could not be finished.
    webm->segment.ForceNewClusterOnNextFrame();
    webm->initialized = true;
    return webm;
}

uint64_t parley_webm_add_video_track(parley_webm *webm, int32_t width, int32_t height, const char *name) {
    const uint64_t number = webm->segment.AddVideoTrack(width, height, 0);
    if (number == 0) return 0;
    mkvmuxer::Track *track = webm->segment.GetTrackByNumber(number);
    track->set_name(name);
    track->set_codec_id(mkvmuxer::Tracks::kVp8CodecId);
    return number;
}

uint64_t parley_webm_add_audio_track(parley_webm *webm, int32_t sample_rate, int32_t channels,
                                     const uint8_t *opus_head, size_t opus_head_length, uint64_t codec_delay_ns,
                                     const char *name) {
    const uint64_t number = webm->segment.AddAudioTrack(sample_rate, channels, 0);
    if (number == 0) return 0;
    mkvmuxer::Track *track = webm->segment.GetTrackByNumber(number);
    track->set_name(name);
    track->set_codec_id(mkvmuxer::Tracks::kOpusCodecId);
    if (!track->SetCodecPrivate(opus_head, opus_head_length)) return 0;
    track->set_codec_delay(codec_delay_ns);
    track->set_seek_pre_roll(80000000ULL);
    return number;
}

uint64_t parley_webm_add_subtitle_track(parley_webm *webm, const char *name) {
    mkvmuxer::Track *track = webm->segment.AddTrack(0);
    if (track == nullptr) return 0;
    track->set_type(0x11);  // subtitle
    track->set_codec_id(mkvmuxer::Tracks::kWebVttSubtitlesId);
    track->set_name(name);
    return track->number();
}

int parley_webm_set_video_size(parley_webm *webm, uint64_t track, int32_t width, int32_t height) {
    if (webm->wrote_frame || width <= 0 || height <= 0) return -1;
    mkvmuxer::Track *found = webm->segment.GetTrackByNumber(track);
    if (found == nullptr || found->type() != mkvmuxer::Tracks::kVideo) return -1;
    mkvmuxer::VideoTrack *video = static_cast<mkvmuxer::VideoTrack *>(found);
    video->set_width(static_cast<uint64_t>(width));
    video->set_height(static_cast<uint64_t>(height));
    return 0;
}

int parley_webm_write_frame(parley_webm *webm, uint64_t track, const uint8_t *data, size_t length,
                            uint64_t timestamp_ns, int is_key) {
    webm->wrote_frame = true;
    return webm->segment.AddFrame(data, length, track, timestamp_ns, is_key != 0) ? 0 : -1;
}

int parley_webm_write_block(parley_webm *webm, uint64_t track, const uint8_t *data, size_t length,
                            uint64_t timestamp_ns, uint64_t duration_ns) {
    webm->wrote_frame = true;
    return webm->segment.AddMetadata(data, length, track, timestamp_ns, duration_ns) ? 0 : -1;
}

int parley_webm_checkpoint(parley_webm *webm, double duration_ms) {
    webm->segment.ForceNewClusterOnNextFrame();
    // The header holds a duration only once written (the first frame writes it); until then there is none to fix.
    mkvmuxer::SegmentInfo *info = webm->segment.GetSegmentInfo();
    if (webm->writer.size() > 0 && duration_ms > 0) {
        info->set_duration(duration_ms);
        if (!info->Finalize(&webm->writer)) return -1;
    }
    return webm->writer.Flush();
}

int parley_webm_finish(parley_webm *webm, double duration_ms) {
    if (duration_ms > 0) webm->segment.set_duration(duration_ms);
    if (!webm->segment.Finalize()) return -1;
    if (webm->writer.Flush() != 0) return -1;
    return 0;
}

int parley_webm_error(const parley_webm *webm) { return webm->writer.error(); }

uint64_t parley_webm_size(const parley_webm *webm) { return webm->writer.size(); }

void parley_webm_fail_after(parley_webm *webm, uint64_t bytes) { webm->writer.fail_after(bytes); }

void parley_webm_close(parley_webm *webm) {
    if (webm == nullptr) return;
    // What is buffered still goes to the file (a recording stopped by an error keeps all it can); a failing write
    // changes nothing more.
    webm->writer.Flush();
    const int fd = webm->fd;
    delete webm;
    close(fd);
}

}  // extern "C"
