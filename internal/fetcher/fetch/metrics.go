package fetch

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	bytes           prometheus.Counter
	downloads       *prometheus.CounterVec
	retries         *prometheus.CounterVec
	inFlight        prometheus.Gauge
	verifyFailures  *prometheus.CounterVec
	partialsExpired prometheus.Counter
	// Products fetched file by file (files.go): the bytes downloaded,
	// and what their archives would have cost.
	fileBytes, fileArchiveBytes prometheus.Counter
}

// newMetrics registers the fetcher's series on reg (nil: none kept).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		bytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_fetcher_bytes_total",
			Help: "Product bytes downloaded (resumed bytes count once)."}),
		downloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_fetcher_downloads_total",
			Help: "Fetches by outcome: ok, unverified, already_there, offline, not_found, checksum, unverifiable, no_space, too_large, bad_name, attempts, canceled, error."}, []string{"outcome"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_fetcher_retries_total",
			Help: "Download requests tried again, by cause: throttled, server, network, cut, idle, unauthorized, range, checksum."}, []string{"cause"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "cdse_fetcher_downloads_in_flight",
			Help: "Fetches running now."}),
		verifyFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "cdse_fetcher_verification_failures_total",
			Help: "Downloads whose bytes disagreed with the catalogue's checksum (or, a file of a product fetched by files, its manifest's), by algorithm."}, []string{"algorithm"}),
		partialsExpired: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_fetcher_partials_expired_total",
			Help: "Unfinished downloads removed from the target after FETCH_PARTIAL_MAX_AGE untouched (partial files, S3 multipart uploads)."}),
		fileBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_fetcher_file_bytes_total",
			Help: "Bytes downloaded file by file (FETCH_FILES, an interest's files): the selected files and their manifests; part of cdse_fetcher_bytes_total."}),
		fileArchiveBytes: prometheus.NewCounter(prometheus.CounterOpts{Name: "cdse_fetcher_file_archive_bytes_total",
			Help: "The archive sizes of the products fetched file by file: what they would have cost whole, against cdse_fetcher_file_bytes_total."}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.bytes, m.downloads, m.retries, m.inFlight, m.verifyFailures, m.partialsExpired, m.fileBytes, m.fileArchiveBytes} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("fetch: registering the metrics: %w", err)
			}
		}
	}
	return m, nil
}
