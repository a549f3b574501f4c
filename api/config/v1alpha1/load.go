package v1alpha1

import (
	"fmt"
	"os"

	"sigs.k8s.io/yaml"
)

// Load reads a configuration file strictly (unknown fields are errors), applies defaults
// and validates it, its policy section with validatePolicy (the policy registry's Validate).
func Load(path string, validatePolicy PolicyValidator) (*Configuration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data, validatePolicy)
}

// Parse is Load on bytes; name is used in error messages.
func Parse(name string, data []byte, validatePolicy PolicyValidator) (*Configuration, error) {
	cfg := &Configuration{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cfg.Kind != "" && cfg.Kind != "Configuration" {
		return nil, fmt.Errorf("%s: kind %q, want Configuration", name, cfg.Kind)
	}
	cfg.Default()
	if errs := cfg.Validate(validatePolicy); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", name, errs.ToAggregate())
	}
	return cfg, nil
}
