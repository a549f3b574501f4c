package report

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/pickyman/pickyman/testbed/metrics"
)

// Write writes results.json, jobs.csv and report.html for runs into dir and returns the
// results.
func Write(dir string, meta Meta, runs []*metrics.Run) (*Results, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	res := Build(meta, runs)
	js, err := res.JSON()
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644); err != nil {
		return nil, err
	}
	var jobs bytes.Buffer
	if err := WriteJobs(&jobs, runs); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "jobs.csv"), jobs.Bytes(), 0o644); err != nil {
		return nil, err
	}
	figs, err := Figures(res, runs)
	if err != nil {
		return nil, err
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, res, figs); err != nil {
		return nil, fmt.Errorf("report: html: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.html"), page.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return res, nil
}
