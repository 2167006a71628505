package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
)

// versionInfo is what GET_VERSION returns: the version string and, with
// the gtp5g-patch series, a feature bitmap.
type versionInfo struct {
	version  string
	features Features
}

// parseVersion decodes a GET_VERSION reply.
func parseVersion(msgs []genetlink.Message) (versionInfo, error) {
	var v versionInfo
	if len(msgs) != 1 {
		return v, fmt.Errorf("decode version: %d messages, want 1", len(msgs))
	}
	ad, err := newDecoder("version", msgs[0].Data)
	if err != nil {
		return v, err
	}
	seen := false
	for ad.Next() {
		switch ad.Type() {
		case attrVersion:
			v.version = ad.String()
			seen = true
		case attrVersionFeatures:
			v.features = Features(ad.Uint32())
		}
	}
	if err := ad.Err(); err != nil {
		return v, fmt.Errorf("decode version: %w", err)
	}
	if !seen || v.version == "" {
		return v, fmt.Errorf("decode version: no version string")
	}
	return v, nil
}
