package main

// Studio, the fleet's web page, on the admin listener of a control plane or standalone node.

import (
	"context"

	"github.com/queryflux/queryflux/internal/studio"
	"github.com/queryflux/queryflux/node/controlplane"
)

func init() {
	controlPlaneHooks = append(controlPlaneHooks, mountStudio)
}

func mountStudio(ctx context.Context, d *Daemon, cp *controlplane.ControlPlane) error {
	cp.Handle(studio.Prefix, studio.New(studio.Config{
		AdminToken: d.Config.QueryFlux.AdminAPI.Token.Reveal(),
		Admin:      cp.Handler(),
		Logger:     d.Logger,
	}))
	return nil
}
