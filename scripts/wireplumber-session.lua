-- WirePlumber 0.4 settings for hear's private PipeWire sessions (make demo, the tests), copied to
-- $XDG_CONFIG_HOME/wireplumber/bluetooth.lua.d/80-hear-session.lua (read before 90-enable-all.lua).
-- A private session has no Bluetooth to manage, and the Bluetooth monitor asks systemd-logind for
-- the seat: where logind's /run/systemd/{seats,sessions,users} are missing (a container, a chroot,
-- a CI runner without systemd), WirePlumber 0.4.13 exits with "failed to start systemd logind monitor".
bluez_monitor.enabled = false
