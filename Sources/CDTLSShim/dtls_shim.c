#include "DTLSShim.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

/* ---- Identity: key, self-signed certificate, SSL_CTX ------------------------------------------------------- */

struct parley_dtls_identity {
    EVP_PKEY *key;
    X509 *certificate;
    SSL_CTX *context;
};

static const char *const default_profiles = "SRTP_AEAD_AES_128_GCM:SRTP_AES128_CM_SHA1_80";

/* The peer's certificate is self-signed (browsers make their own); it is pinned afterwards against the SDP's
   a=fingerprint (RFC 8122), so the chain check has nothing to say: accept it here. */
static int accept_any_certificate(int preverified, X509_STORE_CTX *store) {
    (void)preverified;
    (void)store;
    return 1;
}

static X509 *self_signed_certificate(EVP_PKEY *key, int days) {
    X509 *certificate = X509_new();
    BIGNUM *serial = BN_new();
    int ok = certificate != NULL && serial != NULL;
    /* A random positive 63-bit serial (RFC 5280 §4.1.2.2 wants positive and unique per issuer). */
    ok = ok && BN_rand(serial, 63, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY);
    ok = ok && BN_to_ASN1_INTEGER(serial, X509_get_serialNumber(certificate)) != NULL;
    ok = ok && X509_set_version(certificate, X509_VERSION_3);
    /* Valid from a day ago, so a peer whose clock is a little behind still accepts it. */
    ok = ok && X509_gmtime_adj(X509_getm_notBefore(certificate), -24L * 3600) != NULL;
    ok = ok && X509_gmtime_adj(X509_getm_notAfter(certificate), (long)days * 24 * 3600) != NULL;
    ok = ok && X509_set_pubkey(certificate, key);
    X509_NAME *name = ok ? X509_get_subject_name(certificate) : NULL;
    ok = ok && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"parley", -1, -1, 0);
    ok = ok && X509_set_issuer_name(certificate, name);
    ok = ok && X509_sign(certificate, key, EVP_sha256()) > 0;
    BN_free(serial);
    if (!ok) {
        X509_free(certificate);
        return NULL;
    }
    return certificate;
}

static SSL_CTX *dtls_context(EVP_PKEY *key, X509 *certificate) {
    SSL_CTX *context = SSL_CTX_new(DTLS_method());
    int ok = context != NULL;
    ok = ok && SSL_CTX_set_min_proto_version(context, DTLS1_2_VERSION);
    ok = ok && SSL_CTX_use_certificate(context, certificate) == 1;
    ok = ok && SSL_CTX_use_PrivateKey(context, key) == 1;
    ok = ok && SSL_CTX_check_private_key(context) == 1;
    /* AES-GCM only (what browsers offer first): every encrypted record then carries an 8-byte explicit nonce and a
       16-byte tag, a floor the Swift side checks records against (OpenSSL 3.0 fails the connection on a shorter
       one, with SSL_ERROR_SYSCALL and nothing on its error queue). */
    ok = ok && SSL_CTX_set_cipher_list(context, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384") == 1;
    /* Surprise: SSL_CTX_set_tlsext_use_srtp returns 0 on success. */
    ok = ok && SSL_CTX_set_tlsext_use_srtp(context, default_profiles) == 0;
    if (!ok) {
        SSL_CTX_free(context);
        return NULL;
    }
    /* The MTU is ours (no socket to ask); no session tickets, nothing is resumed. */
    SSL_CTX_set_options(context, SSL_OP_NO_QUERY_MTU | SSL_OP_NO_TICKET);
    SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any_certificate);
    return context;
}

parley_dtls_identity *parley_dtls_identity_new(int days) {
    if (days <= 0) return NULL;
    parley_dtls_identity *identity = calloc(1, sizeof *identity);
    if (identity == NULL) return NULL;
    identity->key = EVP_EC_gen("P-256");
    identity->certificate = identity->key != NULL ? self_signed_certificate(identity->key, days) : NULL;
    identity->context = identity->certificate != NULL ? dtls_context(identity->key, identity->certificate) : NULL;
    if (identity->context == NULL) {
        parley_dtls_identity_free(identity);
        return NULL;
    }
    return identity;
}

void parley_dtls_identity_free(parley_dtls_identity *identity) {
    if (identity == NULL) return;
    SSL_CTX_free(identity->context);
    X509_free(identity->certificate);
    EVP_PKEY_free(identity->key);
    free(identity);
}

int parley_dtls_identity_fingerprint(const parley_dtls_identity *identity, uint8_t out[32]) {
    unsigned int length = 0;
    return X509_digest(identity->certificate, EVP_sha256(), out, &length) == 1 && length == 32;
}

int parley_dtls_peer_fingerprint(const SSL *ssl, uint8_t out[32]) {
    X509 *peer = SSL_get1_peer_certificate(ssl);
    if (peer == NULL) return 0;
    unsigned int length = 0;
    int ok = X509_digest(peer, EVP_sha256(), out, &length) == 1 && length == 32;
    X509_free(peer);
    return ok;
}

/* ---- Datagram queues ---------------------------------------------------------------------------------------- */

/* A memory BIO concatenates writes and hands reads back as one stream, losing datagram boundaries; OpenSSL 3.0
   has no BIO_s_dgram_pair (3.2+). So both BIOs of an endpoint are this small BIO_METHOD over queues of whole
   datagrams: a read takes exactly one incoming datagram; writes append records to an open datagram, which
   BIO_flush (OpenSSL's "this datagram is full" or "end of flight") or the next pop closes. BIO_CTRL_WPENDING
   reports the open datagram's length, which OpenSSL's DTLS writer uses to fit records into the MTU. */

enum { queue_limit = 64, record_room = 18 * 1024 };

struct datagram {
    uint8_t *bytes;
    size_t length;
};

struct queue {
    struct datagram items[queue_limit];
    size_t head;
    size_t count;
};

struct parley_dtls_endpoint {
    SSL *ssl;
    struct queue incoming;
    struct queue outgoing;
    /* A resent flight that OpenSSL prepared on its own (see retransmit_timeout), sent by the next handle_timeout. */
    struct queue held;
    int capturing;
    uint8_t open[record_room];
    size_t open_length;
    size_t mtu;
    unsigned first_timeout_us;
    int first_timeout_used;
};

static int queue_push(struct queue *queue, const uint8_t *bytes, size_t length) {
    if (queue->count == queue_limit) return 0;
    uint8_t *copy = malloc(length > 0 ? length : 1);
    if (copy == NULL) return 0;
    memcpy(copy, bytes, length);
    queue->items[(queue->head + queue->count) % queue_limit] = (struct datagram){copy, length};
    queue->count += 1;
    return 1;
}

static void queue_drop_first(struct queue *queue) {
    free(queue->items[queue->head].bytes);
    queue->items[queue->head] = (struct datagram){NULL, 0};
    queue->head = (queue->head + 1) % queue_limit;
    queue->count -= 1;
}

static void queue_clear(struct queue *queue) {
    while (queue->count > 0) queue_drop_first(queue);
}

static int close_open_datagram(parley_dtls_endpoint *endpoint) {
    if (endpoint->open_length == 0) return 1;
    int ok = queue_push(endpoint->capturing ? &endpoint->held : &endpoint->outgoing, endpoint->open,
                        endpoint->open_length);
    endpoint->open_length = 0;
    return ok;
}

static void start_capture(parley_dtls_endpoint *endpoint) {
    close_open_datagram(endpoint);
    queue_clear(&endpoint->held);
    endpoint->capturing = 1;
}

static void end_capture(parley_dtls_endpoint *endpoint) {
    if (!endpoint->capturing) return;
    close_open_datagram(endpoint);
    endpoint->capturing = 0;
}

static int datagram_write(BIO *bio, const char *data, int length) {
    parley_dtls_endpoint *endpoint = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    if (length <= 0) return 0;
    size_t size = (size_t)length;
    if (endpoint->open_length > 0 && endpoint->open_length + size > endpoint->mtu) {
        if (!close_open_datagram(endpoint)) return -1;
    }
    if (size > record_room - endpoint->open_length) return -1;
    memcpy(endpoint->open + endpoint->open_length, data, size);
    endpoint->open_length += size;
    return length;
}

static int datagram_read(BIO *bio, char *out, int capacity) {
    parley_dtls_endpoint *endpoint = BIO_get_data(bio);
    BIO_clear_retry_flags(bio);
    end_capture(endpoint); /* OpenSSL reads once a resent flight is written. */
    if (endpoint->incoming.count == 0) {
        BIO_set_retry_read(bio);
        return -1;
    }
    struct datagram *first = &endpoint->incoming.items[endpoint->incoming.head];
    /* Like recvfrom on a UDP socket: a datagram longer than the buffer is cut. */
    size_t length = first->length < (size_t)capacity ? first->length : (size_t)capacity;
    memcpy(out, first->bytes, length);
    queue_drop_first(&endpoint->incoming);
    return (int)length;
}

static long datagram_ctrl(BIO *bio, int command, long number, void *pointer) {
    (void)pointer;
    parley_dtls_endpoint *endpoint = BIO_get_data(bio);
    switch (command) {
    case BIO_CTRL_FLUSH: return close_open_datagram(endpoint);
    case BIO_CTRL_WPENDING: return (long)endpoint->open_length;
    case BIO_CTRL_PENDING:
        return endpoint->incoming.count > 0 ? (long)endpoint->incoming.items[endpoint->incoming.head].length : 0;
    case BIO_CTRL_DGRAM_SET_MTU: return number;
    case BIO_CTRL_DGRAM_GET_MTU_OVERHEAD: return 0;
    default: return 0; /* No peer address, no socket MTU, no receive timeout: nothing else applies. */
    }
}

static BIO_METHOD *datagram_method;
static pthread_once_t datagram_method_once = PTHREAD_ONCE_INIT;

static void make_datagram_method(void) {
    BIO_METHOD *method = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "parley datagram queue");
    if (method == NULL) return;
    BIO_meth_set_write(method, datagram_write);
    BIO_meth_set_read(method, datagram_read);
    BIO_meth_set_ctrl(method, datagram_ctrl);
    datagram_method = method;
}

static BIO *datagram_bio(parley_dtls_endpoint *endpoint) {
    pthread_once(&datagram_method_once, make_datagram_method);
    if (datagram_method == NULL) return NULL;
    BIO *bio = BIO_new(datagram_method);
    if (bio == NULL) return NULL;
    BIO_set_data(bio, endpoint);
    BIO_set_init(bio, 1);
    return bio;
}

/* ---- Endpoint ------------------------------------------------------------------------------------------------ */

/* OpenSSL 3.0 judges DTLS retransmission on the wall clock (gettimeofday) and has no clock callback, so an
   injected clock cannot move it. Worse for a caller that wants to decide when to send: OpenSSL checks its timer at
   the top of every record read and resends the flight there, inside SSL_do_handshake, whenever it has expired (it
   counts anything under 15 ms as expired). So this callback, called when a flight's timer starts and again on each
   expiry just before the resend, does two things:
   - on an expiry it turns on capturing: the resent flight goes to the held queue, not out; handle_timeout sends
     it. A retransmission therefore only ever leaves through handle_timeout, whoever prepared it.
   - it sets the durations: the endpoint's very first timer lasts first_timeout_us (a test passes 0, so OpenSSL
     prepares the resend at once and handleTimeout can send it with no wall time passing), later fresh timers 1 s,
     and each expiry doubles up to 60 s (RFC 6347 §4.2.4.1). Only the first may be that short: a timer that stayed
     under 15 ms would expire again at once and OpenSSL would resend in a loop until its limit of 12 fails the
     handshake (measured). */
static unsigned int retransmit_timeout(SSL *ssl, unsigned int previous_us) {
    parley_dtls_endpoint *endpoint = SSL_get_app_data(ssl);
    struct timeval left;
    int expired = DTLSv1_get_timeout(ssl, &left) == 1; /* A fresh start finds no timer running. */
    if (!expired) {
        queue_clear(&endpoint->held); /* A new flight: an older flight's resend is obsolete. */
        if (!endpoint->first_timeout_used) {
            endpoint->first_timeout_used = 1;
            return endpoint->first_timeout_us;
        }
        return 1000000;
    }
    start_capture(endpoint);
    if (previous_us < 1000000) return 1000000;
    return previous_us >= 30000000 ? 60000000 : previous_us * 2;
}

parley_dtls_endpoint *parley_dtls_endpoint_new(
    const parley_dtls_identity *identity, int is_server, const char *profiles, unsigned mtu,
    unsigned first_timeout_us) {
    if (mtu < 256 || mtu > record_room) return NULL;
    parley_dtls_endpoint *endpoint = calloc(1, sizeof *endpoint);
    if (endpoint == NULL) return NULL;
    endpoint->mtu = mtu;
    endpoint->first_timeout_us = first_timeout_us;
    endpoint->ssl = SSL_new(identity->context);
    BIO *in = endpoint->ssl != NULL ? datagram_bio(endpoint) : NULL;
    BIO *out = in != NULL ? datagram_bio(endpoint) : NULL;
    if (out == NULL) {
        BIO_free(in);
        parley_dtls_endpoint_free(endpoint);
        return NULL;
    }
    SSL_set_bio(endpoint->ssl, in, out); /* The SSL owns both BIOs from here. */
    SSL_set_app_data(endpoint->ssl, endpoint);
    int ok = profiles == NULL || SSL_set_tlsext_use_srtp(endpoint->ssl, profiles) == 0;
    ok = ok && SSL_set_mtu(endpoint->ssl, (long)mtu) > 0;
    if (!ok) {
        parley_dtls_endpoint_free(endpoint);
        return NULL;
    }
    DTLS_set_timer_cb(endpoint->ssl, retransmit_timeout);
    if (is_server) {
        SSL_set_accept_state(endpoint->ssl);
    } else {
        SSL_set_connect_state(endpoint->ssl);
    }
    return endpoint;
}

void parley_dtls_endpoint_free(parley_dtls_endpoint *endpoint) {
    if (endpoint == NULL) return;
    SSL_free(endpoint->ssl);
    queue_clear(&endpoint->incoming);
    queue_clear(&endpoint->outgoing);
    queue_clear(&endpoint->held);
    free(endpoint);
}

SSL *parley_dtls_endpoint_ssl(parley_dtls_endpoint *endpoint) { return endpoint->ssl; }

int parley_dtls_endpoint_push(parley_dtls_endpoint *endpoint, const uint8_t *datagram, size_t length) {
    return queue_push(&endpoint->incoming, datagram, length);
}

size_t parley_dtls_endpoint_next_length(parley_dtls_endpoint *endpoint) {
    end_capture(endpoint);
    if (endpoint->outgoing.count > 0) return endpoint->outgoing.items[endpoint->outgoing.head].length;
    return endpoint->open_length;
}

size_t parley_dtls_endpoint_pop(parley_dtls_endpoint *endpoint, uint8_t *out, size_t capacity) {
    end_capture(endpoint);
    if (endpoint->outgoing.count == 0 && !close_open_datagram(endpoint)) return 0;
    if (endpoint->outgoing.count == 0) return 0;
    struct datagram *first = &endpoint->outgoing.items[endpoint->outgoing.head];
    if (first->length > capacity) return 0;
    size_t length = first->length;
    memcpy(out, first->bytes, length);
    queue_drop_first(&endpoint->outgoing);
    return length;
}

int parley_dtls_endpoint_handle_timeout(parley_dtls_endpoint *endpoint) {
    int result = (int)DTLSv1_handle_timeout(endpoint->ssl);
    end_capture(endpoint);
    if (result < 0) return -1;
    int sent = 0;
    while (endpoint->held.count > 0) {
        struct datagram *first = &endpoint->held.items[endpoint->held.head];
        if (!queue_push(&endpoint->outgoing, first->bytes, first->length)) break;
        queue_drop_first(&endpoint->held);
        sent = 1;
    }
    return sent;
}

long long parley_dtls_endpoint_timeout_us(parley_dtls_endpoint *endpoint) {
    struct timeval left = {0, 0};
    if (DTLSv1_get_timeout(endpoint->ssl, &left) != 1) return -1;
    return (long long)left.tv_sec * 1000000 + (long long)left.tv_usec;
}
