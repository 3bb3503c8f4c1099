// parley-device-probe: drives ParleyDevices from a child process for the device tests (filled in by the tests' author).
import ParleyDevices
