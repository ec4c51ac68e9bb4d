// Package systemd holds the single-machine set-up of the receiver: the
// hardened unit cdse-receiver.service (its own dynamic user, HTTPS on
// port 443 with an ACME certificate, the data in its StateDirectory, the
// passwords as systemd credentials) and receiver.env.example, the settings
// it reads. Its test checks both against the receiver's own settings and,
// where systemd-analyze is installed, with systemd itself.
package systemd
