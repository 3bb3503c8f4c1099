#ifndef PARLEY_V4L2_SHIM_H
#define PARLEY_V4L2_SHIM_H
#ifdef __linux__
// The V4L2 structures (v4l2_capability, v4l2_format, v4l2_buffer, ...) and plain constants import from here.
#include <linux/videodev2.h>
#endif

/// ioctl(2) without varargs, retried on EINTR; returns -1 and sets errno on failure.
int parley_v4l2_ioctl(int fd, unsigned long request, void *argument);

#ifdef __linux__
// The VIDIOC_* request codes are _IOWR(...) macro expressions, which Swift does not import: their values.
extern const unsigned long parley_VIDIOC_QUERYCAP;
extern const unsigned long parley_VIDIOC_ENUM_FMT;
extern const unsigned long parley_VIDIOC_ENUM_FRAMESIZES;
extern const unsigned long parley_VIDIOC_ENUM_FRAMEINTERVALS;
extern const unsigned long parley_VIDIOC_S_FMT;
extern const unsigned long parley_VIDIOC_S_PARM;
extern const unsigned long parley_VIDIOC_REQBUFS;
extern const unsigned long parley_VIDIOC_QUERYBUF;
extern const unsigned long parley_VIDIOC_QBUF;
extern const unsigned long parley_VIDIOC_DQBUF;
extern const unsigned long parley_VIDIOC_STREAMON;
extern const unsigned long parley_VIDIOC_STREAMOFF;
#endif
#endif
