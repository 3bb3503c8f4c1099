#ifndef PARLEY_AUDIO_SHIM_H
#define PARLEY_AUDIO_SHIM_H
/// Routes ALSA's own error messages away from standard error (they would print over the call screen).
void parley_audio_quiet_alsa(void);
/// Keeps JACK (which PortAudio probes at start) from printing "cannot connect to server" lines and from starting a
/// JACK server: sets JACK_NO_START_SERVER unless already set and, when libjack is loaded, silences its messages.
void parley_audio_quiet_jack(void);
#endif
