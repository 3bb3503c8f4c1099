#include "CV4L2Shim.h"
#include <errno.h>
#include <sys/ioctl.h>
int parley_v4l2_ioctl(int fd, unsigned long request, void *argument) {
    int result;
    do { result = ioctl(fd, request, argument); } while (result == -1 && errno == EINTR);
    return result;
}

#ifdef __linux__
const unsigned long parley_VIDIOC_QUERYCAP = VIDIOC_QUERYCAP;
const unsigned long parley_VIDIOC_ENUM_FMT = VIDIOC_ENUM_FMT;
const unsigned long parley_VIDIOC_ENUM_FRAMESIZES = VIDIOC_ENUM_FRAMESIZES;
const unsigned long parley_VIDIOC_ENUM_FRAMEINTERVALS = VIDIOC_ENUM_FRAMEINTERVALS;
const unsigned long parley_VIDIOC_S_FMT = VIDIOC_S_FMT;
const unsigned long parley_VIDIOC_S_PARM = VIDIOC_S_PARM;
const unsigned long parley_VIDIOC_REQBUFS = VIDIOC_REQBUFS;
const unsigned long parley_VIDIOC_QUERYBUF = VIDIOC_QUERYBUF;
const unsigned long parley_VIDIOC_QBUF = VIDIOC_QBUF;
const unsigned long parley_VIDIOC_DQBUF = VIDIOC_DQBUF;
const unsigned long parley_VIDIOC_STREAMON = VIDIOC_STREAMON;
const unsigned long parley_VIDIOC_STREAMOFF = VIDIOC_STREAMOFF;
#endif
