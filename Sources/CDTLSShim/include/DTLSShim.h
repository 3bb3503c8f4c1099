#ifndef PARLEY_DTLS_SHIM_H
#define PARLEY_DTLS_SHIM_H

/* OpenSSL's DTLS 1.2 over memory BIOs for DTLS-SRTP (RFC 5764), behind plain functions with a parley_dtls_ prefix.
   Filled in by the DTLS work of issue 53. */
int parley_dtls_version(void);

#endif
