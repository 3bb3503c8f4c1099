#ifndef PARLEY_AUDIO_SHIM_H
#define PARLEY_AUDIO_SHIM_H
/// Routes ALSA's own error messages away from standard error (they would print over the call screen).
void parley_audio_quiet_alsa(void);
/// Keeps JACK (which PortAudio probes at start) from printing "cannot connect to server" lines and from starting a
/// JACK server: sets JACK_NO_START_SERVER unless already set and, when libjack is loaded, silences its messages.
void parley_audio_quiet_jack(void);
/// Reads the nice value of the calling process's scheduling group (Linux autogroup) into `nice`: 0, or -1 with errno
/// ENOENT when there is none to read (a kernel without autogroups, or a process in the first process's session, whose file reads as empty).
int parley_session_group_nice(int *nice);
/// Sets the nice value of the calling process's scheduling group (Linux autogroup: its terminal session), keeping
/// the value it had for `parley_session_group_restore`. Returns the value it had, or INT32_MIN with errno ENOENT
/// when there is no group to read (as `parley_session_group_nice`), or with the write's errno when refused.
int parley_session_group_raise(int nice);
/// Puts back the value `parley_session_group_raise` replaced, once; does nothing otherwise. Async-signal-safe.
void parley_session_group_restore(void);
#endif
