// Package systemd holds the single-machine set-up of the receiver: the
// hardened unit cdse-receiver.service (its own dynamic user, HTTPS on
// port 443 with an ACME certificate, the data in its StateDirectory, the
// passwords as systemd credentials) and receiver.env.example, the settings
// it reads; and of the fetcher beside it: cdse-fetcher.service (as
// hardened, its own static user owning the products' directory, after the
// receiver), fetcher.env.example, and the receiver's drop-in
// cdse-receiver.service.d/fetcher.conf that gives the embedded NATS the
// fetcher's login. Its tests check them against the receiver's and the
// fetcher's own settings and, where systemd-analyze is installed, with
// systemd itself.
package systemd
