#include <pulse/pulseaudio.h>
