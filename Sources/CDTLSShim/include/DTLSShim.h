#ifndef PARLEY_DTLS_SHIM_H
#define PARLEY_DTLS_SHIM_H

/* OpenSSL's DTLS 1.2 over in-memory datagram queues for DTLS-SRTP (RFC 5764), behind plain functions with a
   parley_dtls_ prefix. Only what Swift cannot call comfortably lives here: SSL_CTX_ctrl and BIO_ctrl macros, the
   variadic key generation, a BIO_METHOD with C callbacks, the retransmission timer callback. Swift calls the plain
   OpenSSL functions (SSL_do_handshake, SSL_export_keying_material, ...) itself on the SSL* this shim hands out. */

#include <stddef.h>
#include <stdint.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

/* A certificate and its key for DTLS: an EC P-256 key, a self-signed X.509 certificate (CN "parley", random
   serial, valid from a day ago for `days` days) and an SSL_CTX for DTLS 1.2 with both SRTP profiles. */
typedef struct parley_dtls_identity parley_dtls_identity;

/* NULL on failure (OpenSSL's error queue says why). */
parley_dtls_identity *parley_dtls_identity_new(int days);
void parley_dtls_identity_free(parley_dtls_identity *identity);
/* SHA-256 of the certificate's DER encoding into out (32 bytes); 1 on success. */
int parley_dtls_identity_fingerprint(const parley_dtls_identity *identity, uint8_t out[32]);

/* One DTLS connection: an SSL over two datagram queues (incoming, outgoing) that keep datagram boundaries. */
typedef struct parley_dtls_endpoint parley_dtls_endpoint;

/* is_server: 1 for the DTLS server (a=setup:passive), 0 for the client. profiles: an OpenSSL SRTP profile list
   ("SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80") or NULL for the identity's. mtu: the largest datagram.
   first_timeout_us: the first retransmission timeout of the first flight (0 = expired at once, see the .c file);
   later timeouts start at 1 s and double up to 60 s (RFC 6347 §4.2.4.1). NULL on failure. */
parley_dtls_endpoint *parley_dtls_endpoint_new(
    const parley_dtls_identity *identity, int is_server, const char *profiles, unsigned mtu,
    unsigned first_timeout_us);
void parley_dtls_endpoint_free(parley_dtls_endpoint *endpoint);
/* The endpoint's SSL, owned by the endpoint: for the plain OpenSSL functions. */
SSL *parley_dtls_endpoint_ssl(parley_dtls_endpoint *endpoint);

/* Queues one incoming datagram (copied) for the next SSL call; 0 if the incoming queue already holds its limit. */
int parley_dtls_endpoint_push(parley_dtls_endpoint *endpoint, const uint8_t *datagram, size_t length);
/* Bytes in the oldest outgoing datagram, 0 when there is none. */
size_t parley_dtls_endpoint_next_length(parley_dtls_endpoint *endpoint);
/* Moves the oldest outgoing datagram into out (capacity bytes, at least parley_dtls_endpoint_next_length) and
   returns its length; 0 when there is none or it does not fit. */
size_t parley_dtls_endpoint_pop(parley_dtls_endpoint *endpoint, uint8_t *out, size_t capacity);

/* DTLSv1_handle_timeout, then queues for sending any resent flight OpenSSL prepared (now or earlier, inside a
   handshake step whose record read found the timer expired): 1 if a flight was queued again, 0 if not, -1 on a
   fatal error (too many retransmissions). */
int parley_dtls_endpoint_handle_timeout(parley_dtls_endpoint *endpoint);
/* DTLSv1_get_timeout: microseconds until the retransmission timer expires (0 if expired), -1 if none runs. */
long long parley_dtls_endpoint_timeout_us(parley_dtls_endpoint *endpoint);

/* SHA-256 of the peer certificate's DER encoding into out (32 bytes); 1 if there is a peer certificate. */
int parley_dtls_peer_fingerprint(const SSL *ssl, uint8_t out[32]);

#endif
