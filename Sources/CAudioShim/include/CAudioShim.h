#ifndef PARLEY_AUDIO_SHIM_H
#define PARLEY_AUDIO_SHIM_H
/// Routes ALSA's own error messages away from standard error (they would print over the call screen).
void parley_audio_quiet_alsa(void);
#endif
