package ipc

import (
	"context"
	"net/http"
	"time"
)

// FleetCheck answers GET /v1/fleet/check: how this host's rows in the
// fleet index differ from its own index. OK is set when they do not.
type FleetCheck struct {
	Host string `json:"host"`
	OK   bool   `json:"ok"`
	// Files is the number of published files in the index, and Rows the
	// number of this host's file rows in the fleet.
	Files int `json:"files"`
	Rows  int `json:"rows"`
	// Missing counts published files with no row, or a row that differs
	// (path, size, mtime or content); Extra counts rows of files the index
	// does not publish. Up to MaxFleetCheckList of each are listed.
	Missing      int      `json:"missing"`
	Extra        int      `json:"extra"`
	MissingPaths []string `json:"missing_paths,omitempty"`
	ExtraIDs     []int64  `json:"extra_file_ids,omitempty"`
	// BadContents counts the contents this host's rows name that the
	// fleet lacks, or holds without a posting per entry of its signature.
	BadContents int `json:"bad_contents"`
	// Pending is the number of changes not yet published when the check
	// ran: rows may differ by as many until the publisher catches up.
	Pending int `json:"pending"`
}

// MaxFleetCheckList caps the paths and ids a FleetCheck lists.
const MaxFleetCheckList = 20

// FleetForgetRequest asks the daemon to remove a host from the fleet index
// (POST /v1/fleet/forget): its files, and the contents no other host
// holds.
type FleetForgetRequest struct {
	Host string `json:"host"`
}

// FleetForgetResponse answers a FleetForgetRequest.
type FleetForgetResponse struct {
	Host string `json:"host"`
	// Files and Contents are the rows removed.
	Files    int64 `json:"files"`
	Contents int64 `json:"contents"`
}

// FleetCheck asks the daemon to compare its rows in the fleet index with
// its own index.
func (c *Client) FleetCheck(ctx context.Context) (*FleetCheck, error) {
	var out FleetCheck
	if err := c.do(ctx, http.MethodGet, "/v1/fleet/check", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FleetForget asks the daemon to remove host from the fleet index.
func (c *Client) FleetForget(ctx context.Context, host string) (*FleetForgetResponse, error) {
	var out FleetForgetResponse
	if err := c.do(ctx, http.MethodPost, "/v1/fleet/forget", &FleetForgetRequest{Host: host}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// FleetHostsResponse answers GET /v1/fleet/hosts: this host's name in the
// fleet, and the hosts of the fleet heard from within its silence with
// their published roots (the tops of their directories in a fleet
// answer). When the database does not answer, Hosts is empty and
// FleetError says why (CodeFleetDown); Host is still set.
type FleetHostsResponse struct {
	Host       string      `json:"host"`
	Hosts      []FleetHost `json:"hosts"`
	FleetError *Error      `json:"fleet_error,omitempty"`
}

// FleetHost is one host of the fleet as the fleet database knows it.
type FleetHost struct {
	Host string `json:"host"`
	// Roots are the roots it publishes.
	Roots    []FilePath `json:"roots"`
	LastSeen time.Time  `json:"last_seen"`
	Version  string     `json:"version,omitempty"`
}

// FleetHosts asks the daemon for the hosts of its fleet.
func (c *Client) FleetHosts(ctx context.Context) (*FleetHostsResponse, error) {
	var out FleetHostsResponse
	if err := c.do(ctx, http.MethodGet, "/v1/fleet/hosts", nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
