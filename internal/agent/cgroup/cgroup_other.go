//go:build !linux

package cgroup

import (
	"errors"
	"os/exec"
	"syscall"
)

var errNotLinux = errors.New("cgroup: control groups exist only on Linux")

// Open fails: control groups exist only on Linux.
func Open(Options) (*Manager, error) { return nil, errNotLinux }

// Manager is never made outside Linux.
type Manager struct{}

// Describe says nothing: there is no manager.
func (*Manager) Describe() string { return "" }

// Missing lists nothing.
func (*Manager) Missing() []string { return nil }

// New fails.
func (*Manager) New(string, Limits) (*Group, error) { return nil, errNotLinux }

// Take fails.
func (*Manager) Take(string, Limits) (*Group, error) { return nil, errNotLinux }

// Close does nothing.
func (*Manager) Close() error { return nil }

// Group is never made outside Linux.
type Group struct{}

// Start starts cmd.
func (*Group) Start(_ *exec.Cmd, start func() error) (error, error) { return start(), nil }

// Procs lists nothing.
func (*Group) Procs() ([]int, error) { return nil, nil }

// Signal does nothing.
func (*Group) Signal(syscall.Signal) error { return nil }

// Kill does nothing.
func (*Group) Kill() error { return nil }

// Usage is unknown.
func (*Group) Usage() Usage { return Usage{} }

// Remove does nothing.
func (*Group) Remove() error { return nil }

// Release does nothing.
func (*Group) Release() error { return nil }
