#ifndef PARLEY_V4L2_SHIM_H
#define PARLEY_V4L2_SHIM_H
/// ioctl(2) without varargs, retried on EINTR; returns -1 and sets errno on failure.
int parley_v4l2_ioctl(int fd, unsigned long request, void *argument);
#endif
