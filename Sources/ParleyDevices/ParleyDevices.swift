/// Real devices: microphones, speakers and cameras. See docs/devices.md.
public enum ParleyDevices {}
