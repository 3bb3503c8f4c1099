#include "CV4L2Shim.h"
#include <errno.h>
#include <sys/ioctl.h>
int parley_v4l2_ioctl(int fd, unsigned long request, void *argument) {
    int result;
    do { result = ioctl(fd, request, argument); } while (result == -1 && errno == EINTR);
    return result;
}
