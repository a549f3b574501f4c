package app

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/types"
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
	// WebhookCerts says where the webhook server's certificate comes from: CertsRotate,
	// CertsSelfSigned or CertsExternal. WebhookService/Namespace name the Service it is made
	// for.
	WebhookCerts     string
	WebhookSecret    string
	WebhookService   string
	WebhookNamespace string
	MutatingConfig   string
	ValidatingConfig string
	// WebhookHost is the address the webhook server binds (all when empty); with
	// CertsSelfSigned it is added to the certificate, so the API server can call the webhooks
	// by URL (the local testbed, where a Service has no reachable endpoints).
	WebhookHost string
}

// Sources of the webhook server's certificate (--webhook-certs).
const (
	// CertsRotate: the operator makes a CA and a serving certificate, keeps them in the
	// Secret --webhook-secret (every replica writes it into its certificate directory),
	// renews them before they expire and injects the CA into its webhook configurations.
	// What config/default installs.
	CertsRotate = "rotate"
	// CertsSelfSigned: a certificate made at start and written to the certificate
	// directory, the CA injected; no Secret (the local testbed's operator processes).
	CertsSelfSigned = "self-signed"
	// CertsExternal: someone else writes the certificate into the Secret --webhook-secret
	// and injects the CA (cert-manager: config/overlays/cert-manager); every replica writes
	// it into its certificate directory.
	CertsExternal = "external"
)

// Bind registers the flags.
func (f *Flags) Bind(fs *flag.FlagSet) {
	fs.StringVar(&f.ConfigFile, "config", "", "configuration file (config.pickyman.dev/v1alpha1 Configuration); defaults if empty")
	fs.BoolVar(&f.Webhooks, "webhooks", true, "serve the admission webhooks")
	fs.StringVar(&f.WebhookCerts, "webhook-certs", CertsRotate, "where the webhook certificate comes from: rotate (made, kept in --webhook-secret and rotated by the operator), self-signed (made at start, no Secret) or external (written into --webhook-secret by someone else, e.g. cert-manager)")
	fs.StringVar(&f.WebhookSecret, "webhook-secret", "pickyman-webhook-server-cert", "Secret of the webhook certificate, in --webhook-namespace (--webhook-certs=rotate or external)")
	fs.StringVar(&f.WebhookService, "webhook-service", "pickyman-webhook-service", "Service name the generated certificate is valid for")
	fs.StringVar(&f.WebhookNamespace, "webhook-namespace", "pickyman-system", "namespace of the webhook Service")
	fs.StringVar(&f.MutatingConfig, "mutating-webhook-configuration", "pickyman-mutating-webhook-configuration", "name of the MutatingWebhookConfiguration to inject the CA into")
	fs.StringVar(&f.WebhookHost, "webhook-host", "", "address the webhook server binds; with --webhook-certs=self-signed also a name in the certificate")
	fs.StringVar(&f.ValidatingConfig, "validating-webhook-configuration", "pickyman-validating-webhook-configuration", "name of the ValidatingWebhookConfiguration to inject the CA into")
}

// DefaultCertDir is the webhook server's certificate directory when the configuration names
// none (controller-runtime's default; config/default mounts the Secret there).
const DefaultCertDir = "/tmp/k8s-webhook-server/serving-certs"

// LoadConfig reads the configuration file, or returns the defaults.
func LoadConfig(path string) (*configv1.Configuration, error) {
	if path == "" {
		c := &configv1.Configuration{}
		c.Default()
		if errs := c.Validate(policies.Validate); len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		return c, nil
	}
	return configv1.Load(path, policies.Validate)
}

// Run starts the operator and blocks until ctx ends.
func Run(ctx context.Context, f Flags) error {
	memLimit, err := SetMemoryLimit(os.Getenv)
	if err != nil {
		return err
	}
	conf, err := LoadConfig(f.ConfigFile)
	if err != nil {
		return err
	}
	m, err := metrics.NewRegistered()
	if err != nil {
		return err
	}
	switch f.WebhookCerts {
	case CertsRotate, CertsSelfSigned, CertsExternal:
	default:
		return fmt.Errorf("--webhook-certs: unknown source %q (want %s, %s or %s)", f.WebhookCerts, CertsRotate, CertsSelfSigned, CertsExternal)
	}
	var files cert.Files
	if f.Webhooks && f.WebhookCerts == CertsSelfSigned {
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
	opts := setup.Options{Metrics: m, Webhooks: f.Webhooks, WebhookHost: f.WebhookHost}
	var certsReady chan struct{}
	if f.Webhooks && (f.WebhookCerts == CertsRotate || f.WebhookCerts == CertsExternal) {
		// The rotator and the Secret's sync are registered on the manager, which does not
		// exist yet: the webhooks wait on a channel that is closed when they are ready.
		certsReady = make(chan struct{})
		opts.CertsReady = certsReady
	}
	mgr, err := setup.New(restCfg, conf, opts)
	if err != nil {
		return err
	}
	if certsReady != nil {
		ready, err := addCertificates(mgr, f, conf)
		if err != nil {
			return err
		}
		go func() {
			select {
			case <-ready:
				close(certsReady)
			case <-ctx.Done():
			}
		}()
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
	ctrl.Log.Info("starting", "policy", conf.Policy.Name, "queues", len(conf.Queues), "webhooks", f.Webhooks, "memoryLimit", memLimit)
	return mgr.Start(ctx)
}

// addCertificates registers what brings the webhook certificate from its Secret into the
// certificate directory: the Secret's sync, and with CertsRotate the rotator that makes,
// renews and injects it. The channel is closed when the webhooks may be served.
func addCertificates(mgr ctrl.Manager, f Flags, conf *configv1.Configuration) (<-chan struct{}, error) {
	certDir := conf.Manager.WebhookCertDir
	if certDir == "" {
		certDir = DefaultCertDir
	}
	sync := &cert.Sync{Reader: mgr.GetAPIReader(), Secret: types.NamespacedName{Namespace: f.WebhookNamespace, Name: f.WebhookSecret},
		Dir: certDir, Fast: 500 * time.Millisecond, Slow: 30 * time.Second}
	if err := mgr.Add(sync); err != nil {
		return nil, err
	}
	if f.WebhookCerts != CertsRotate {
		return sync.Written(), nil
	}
	ready, err := cert.AddRotator(mgr, cert.Rotation{
		Namespace: f.WebhookNamespace, Secret: f.WebhookSecret, Service: f.WebhookService,
		CertDir: certDir, Mutating: f.MutatingConfig, Validating: f.ValidatingConfig,
	})
	if err != nil {
		return nil, fmt.Errorf("webhook certificate rotator: %w", err)
	}
	return ready, nil
}
