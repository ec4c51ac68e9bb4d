package main

import (
	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/ingest/quarantine"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
	"github.com/cdse-jetstream/receiver/internal/receiver/config"
	"github.com/cdse-jetstream/receiver/internal/receiver/wiring"
	"github.com/cdse-jetstream/receiver/internal/stream/topology"
)

// quarantineHelp is the quarantine command's long help.
const quarantineHelp = `The bodies the receiver refused (invalid JSON, an invalid notification, ...),
kept verbatim on the quarantine stream:

  list     what is quarantined: sequence, time, source, reason, product id
  show     the body of one, exactly as stored (-o json|yaml: with its metadata)
  replay   validate every quarantined body (or those named: replay 12 15)
           again with this version and publish those that pass onto the
           product stream, exactly once (the dedupe keys are those they
           would have had); each one published is removed from the
           quarantine
  drop     remove the bodies named (drop 12 15) for good: those that will
           never be valid, which would otherwise stay until
           QUARANTINE_MAX_AGE (and register status warn about them)

list reads the headers only and replay one body at a time, so a quarantine
of a gigabyte costs the command a few megabytes.

` + commandSettingsHelp

// quarantineCmd is what the quarantine's verbs share: the output flag and
// the settings, and a connection opened from them.
type quarantineCmd struct {
	getenv     func(string) string
	configFile *string // the root's --config
	out        *cli.Output
}

// newQuarantine is `receiver quarantine list|show|replay|drop`, a file per
// verb.
func newQuarantine(getenv func(string) string, configFile *string) *cobra.Command {
	qc := &quarantineCmd{getenv: getenv, configFile: configFile}
	q := &cobra.Command{
		Use:   "quarantine",
		Short: "List, show, replay and drop the refused bodies kept on the quarantine stream",
		Long:  quarantineHelp,
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return cli.Usagef("want one of list, show SEQ, replay [SEQ...], drop SEQ...")
		},
	}
	qc.out = cli.AddOutputFlag(q)
	q.PersistentPreRunE = func(*cobra.Command, []string) error { return qc.out.Check() }
	q.AddCommand(newQuarantineList(qc), newQuarantineShow(qc), newQuarantineReplay(qc), newQuarantineDrop(qc))
	return q
}

// open loads and validates the settings a verb uses, and connects.
func (qc *quarantineCmd) open(withRoute bool) (config.Config, *topology.Topology, func(), error) {
	checks := []func(config.Config) error{config.Config.ValidateNATS, config.Config.ValidateStreams, config.Config.ValidateLogging}
	if withRoute {
		checks = append(checks, config.Config.ValidateRoute)
	}
	cfg, err := commandConfig(*qc.configFile, qc.getenv, checks...)
	if err != nil {
		return cfg, nil, nil, err
	}
	nc, topo, err := wiring.Connect(cfg, "cdse-receiver-quarantine")
	if err != nil {
		return cfg, nil, nil, err
	}
	return cfg, topo, nc.Close, nil
}

func quarantineReader(topo *topology.Topology) *quarantine.Reader {
	return quarantine.NewReader(topo.JetStream(), topo.QuarantineStream())
}
