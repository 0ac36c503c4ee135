package config

import "maps"

// ExpandedCluster is a cluster after variant expansion, with where it came from.
type ExpandedCluster struct {
	Cluster
	Path string // "clusters[2]" or "clusters[2].variants.etl", for error messages
}

// ExpandClusters returns every cluster with its variants expanded: the base cluster, then one
// cluster per variant named "base::variant" (variants in name order), each with the variant's
// overrides applied. Expanded clusters have no variants of their own.
func (cfg *Config) ExpandClusters() []ExpandedCluster {
	var out []ExpandedCluster
	for i, base := range cfg.Clusters {
		path := index("clusters", i)
		b := base
		b.Variants = nil
		out = append(out, ExpandedCluster{Cluster: b, Path: path})
		for _, name := range sortedKeys(base.Variants) {
			v := applyOverrides(b, base.Variants[name])
			v.Name = base.Name + VariantSeparator + name
			out = append(out, ExpandedCluster{Cluster: v, Path: key(path+".variants", name)})
		}
	}
	return out
}

// applyOverrides returns base with every set field of o replacing base's; labels and options merge.
func applyOverrides(base Cluster, o ClusterOverrides) Cluster {
	c := base
	if o.Endpoint != nil {
		c.Endpoint = *o.Endpoint
	}
	if o.Database != nil {
		c.Database = *o.Database
	}
	if o.Credentials != nil {
		c.Credentials = *o.Credentials
	}
	if o.MaxRunningQueries != nil {
		c.MaxRunningQueries = *o.MaxRunningQueries
	}
	if o.Enabled != nil {
		enabled := *o.Enabled
		c.Enabled = &enabled
	}
	c.Labels = mergeMaps(base.Labels, o.Labels)
	c.Options = mergeMaps(base.Options, o.Options)
	return c
}

func mergeMaps(base, over map[string]string) map[string]string {
	if len(base) == 0 && len(over) == 0 {
		return nil
	}
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, over)
	return out
}
