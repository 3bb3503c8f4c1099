#include "DTLSShim.h"
#include <openssl/opensslv.h>

int parley_dtls_version(void) { return (int)(OPENSSL_VERSION_NUMBER >> 20); }
