package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/cdse-jetstream/receiver/internal/fetcher"
	"github.com/cdse-jetstream/receiver/internal/fetcher/fetchconfig"
	"github.com/cdse-jetstream/receiver/internal/fetcher/stacitem"
	"github.com/cdse-jetstream/receiver/internal/platform/cli"
)

// newStac prints a stored product's STAC item, or the collection a STAC
// API or pgstac needs before its items.
func newStac(getenv func(string) string, configFile *string) *cobra.Command {
	var collection string
	cmd := &cobra.Command{
		Use:   "stac PRODUCT-ID | stac --collection PRODUCT-TYPE",
		Short: "Print a stored product's STAC item, or a product type's STAC collection",
		Long: `Prints the STAC 1.1.0 item the fetcher wrote beside the product in
FETCH_TARGET (<key>.json, the fetched event's Cdse-Stac-Item): the product's
key is found as the server finds it, from its entity in the catalogue.

With --collection, prints the STAC collection of a product type (S2MSI2A,
IW_GRDH_1S, …), which a STAC API or pgstac needs loaded before its items;
it needs no setting.

` + settingsHelp + `

Exit codes: 0 ok, 1 error (no item stored: exit 1), 2 usage.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if collection != "" {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
	}
	fetchconfig.BindFlags(cmd.Flags())
	cmd.Flags().StringVar(&collection, "collection", "", "print the STAC collection of this product type instead")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if collection != "" {
			doc, err := stacitem.Collection(collection)
			if err != nil {
				return cli.Usagef("--collection %q: %v", collection, err)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s\n", doc)
			return err
		}
		ctx := cmd.Context()
		cfg, parts, err := buildParts(cmd, getenv, *configFile)
		if err != nil {
			return err
		}
		n, err := productEvent(ctx, parts, args[0])
		if err != nil {
			return err
		}
		key := fetcher.ItemKey(fetcher.Key(cfg.KeyTemplate, n))
		r, err := parts.Target.Read(ctx, key)
		if err != nil {
			return fmt.Errorf("the STAC item of %s (%s): %w", args[0], n.ProductName, err)
		}
		defer r.Close()
		_, err = io.Copy(cmd.OutOrStdout(), r)
		return err
	}
	return cmd
}
