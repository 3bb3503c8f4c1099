// Browsers in a Parley room (issue 53), in small owners as Janus and mediasoup split them:
// - SDP/: the session description as a typed model, parsed and printed, and the relay's answer to a browser's offer.
// - ICE/: ICE-lite, a state machine of STUN in and STUN out (RFC 8445 §2.5, RFC 5389).
// - DTLS/: one OpenSSL DTLS context per browser over memory BIOs, and the SRTP session its keys open (RFC 5764).
