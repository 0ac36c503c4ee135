package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

const plain = "hunter2-very-secret"

func TestSecretNeverPrints(t *testing.T) {
	s := Secret(plain)
	creds := Credentials{User: "u", Password: s, Token: s}
	cluster := Cluster{Name: "c", Credentials: creds}
	qf := QueryFlux{AdminAPI: AdminAPI{Token: s}, Persistence: Persistence{DatabaseURL: s}}

	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X"} {
		outputs = append(outputs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, creds), fmt.Sprintf(verb, cluster), fmt.Sprintf(verb, qf))
	}
	outputs = append(outputs, fmt.Sprint(s, &cluster), s.String())

	for _, newHandler := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(newHandler(&buf))
		log.Info("login", "password", s, "creds", creds, "cluster", cluster, slog.Any("qf", qf))
		log.Info("group", slog.Group("g", "secret", s))
		outputs = append(outputs, buf.String())
	}
	j, err := json.Marshal(cluster)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.Marshal(qf)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(j), string(y))

	for _, out := range outputs {
		if strings.Contains(out, plain) || strings.Contains(out, fmt.Sprintf("%x", plain)) {
			t.Fatalf("secret shows in %q", out)
		}
	}
	if !strings.Contains(outputs[0], "[redacted]") {
		t.Fatalf("a set secret should print as [redacted], got %q", outputs[0])
	}
	if s.Reveal() != plain {
		t.Fatal("Reveal lost the value")
	}
	if Secret("").String() != "" {
		t.Fatal("an empty secret should print empty, so 'not set' stays visible")
	}
}

func TestSecretDecodesFromYAML(t *testing.T) {
	cfg, err := Parse([]byte("queryflux: {adminApi: {token: " + plain + "}}\nclusters: [{name: a, engine: sim, maxRunningQueries: 1, credentials: {password: 12345}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.QueryFlux.AdminAPI.Token.Reveal() != plain || cfg.Clusters[0].Credentials.Password.Reveal() != "12345" {
		t.Fatalf("decoded %q %q", cfg.QueryFlux.AdminAPI.Token.Reveal(), cfg.Clusters[0].Credentials.Password.Reveal())
	}
	if strings.Contains(fmt.Sprintf("%+v", *cfg), plain) {
		t.Fatal("printing a config shows a secret")
	}
}
