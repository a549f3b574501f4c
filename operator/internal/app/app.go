package app

import (
	"context"
	"flag"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1 "github.com/pickyman/pickyman/api/config/v1alpha1"
	"github.com/pickyman/pickyman/operator/internal/cert"
	"github.com/pickyman/pickyman/operator/internal/metrics"
	"github.com/pickyman/pickyman/operator/internal/setup"
	"github.com/pickyman/pickyman/operator/pkg/policies"
)

// Flags are the operator's command-line flags.
type Flags struct {
	ConfigFile string
	Webhooks   bool
	// SelfSignedCerts generates the webhook certificates and injects the CA (local
	// testbed); WebhookService/Namespace name the Service they are made for.
	SelfSignedCerts  bool
	WebhookService   string
	WebhookNamespace string
	MutatingConfig   string
	ValidatingConfig string
	// WebhookHost is the address the webhook server binds (all when empty); with
	// SelfSignedCerts it is added to the certificate, so the API server can call the webhooks
	// by URL (the local testbed, where a Service has no reachable endpoints).
	WebhookHost string
}

// Bind registers the flags.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.ConfigFile, "config", "", "configuration file (config.pickyman.dev/v1alpha1 Configuration); defaults if empty")
	fs.BoolVar(&f.Webhooks, "webhooks", true, "serve the admission webhooks")
	fs.BoolVar(&f.SelfSignedCerts, "self-signed-certs", false, "generate the webhook certificates and inject the CA into the webhook configurations")
	fs.StringVar(&f.WebhookService, "webhook-service", "pickyman-webhook-service", "Service name the generated certificate is valid for")
	fs.StringVar(&f.WebhookNamespace, "webhook-namespace", "pickyman-system", "namespace of the webhook Service")
	fs.StringVar(&f.MutatingConfig, "mutating-webhook-configuration", "pickyman-mutating-webhook-configuration", "name of the MutatingWebhookConfiguration to inject the CA into")
	fs.StringVar(&f.WebhookHost, "webhook-host", "", "address the webhook server binds; with --self-signed-certs also a name in the certificate")
	fs.StringVar(&f.ValidatingConfig, "validating-webhook-configuration", "pickyman-validating-webhook-configuration", "name of the ValidatingWebhookConfiguration to inject the CA into")
}

// LoadConfig reads the configuration file, or returns the defaults.
func LoadConfig(path string) (*configv1.Configuration, error) {
	if path == "" {
		c := &configv1.Configuration{}
		c.Default()
		if errs := c.Validate(policies.Names()); len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		return c, nil
	}
	return configv1.Load(path, policies.Names())
}

// Run starts the operator and blocks until ctx ends.
func Run(ctx context.Context, f Flags) error {
	conf, err := LoadConfig(f.ConfigFile)
	if err != nil {
		return err
	}
	m, err := metrics.NewRegistered()
	if err != nil {
		return err
	}
	var files cert.Files
	if f.Webhooks && f.SelfSignedCerts {
		if conf.Manager.WebhookCertDir == "" {
			conf.Manager.WebhookCertDir = "/tmp/pickyman-webhook-certs"
		}
		hosts := cert.ServiceHosts(f.WebhookService, f.WebhookNamespace)
		if f.WebhookHost != "" {
			hosts = append(hosts, f.WebhookHost)
		}
		files, err = cert.Generate(hosts, time.Now(), 365*24*time.Hour)
		if err != nil {
			return err
		}
		if err := files.Write(conf.Manager.WebhookCertDir); err != nil {
			return err
		}
	}
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	mgr, _, err := setup.New(restCfg, conf, setup.Options{Metrics: m, Webhooks: f.Webhooks, WebhookHost: f.WebhookHost})
	if err != nil {
		return err
	}
	if files.CA != nil {
		c, err := client.New(restCfg, client.Options{Scheme: mgr.GetScheme()})
		if err != nil {
			return err
		}
		if err := cert.InjectCABundle(ctx, c, files.CA, f.MutatingConfig, f.ValidatingConfig); err != nil {
			return fmt.Errorf("inject webhook CA: %w", err)
		}
	}
	ctrl.Log.Info("starting", "policy", conf.Policy.Name, "queues", len(conf.Queues), "webhooks", f.Webhooks)
	return mgr.Start(ctx)
}
