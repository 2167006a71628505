package gtpnl

import (
	"fmt"

	"github.com/mdlayher/genetlink"
)

// parseVersion decodes gtp5g's GET_VERSION reply: the version string,
// attribute 0.
func parseVersion(msgs []genetlink.Message) (string, error) {
	if len(msgs) != 1 {
		return "", fmt.Errorf("decode version: %d messages, want 1", len(msgs))
	}
	ad, err := newDecoder("version", msgs[0].Data)
	if err != nil {
		return "", err
	}
	var v string
	for ad.Next() {
		if ad.Type() == attrVersion {
			v = ad.String()
		}
	}
	if err := ad.Err(); err != nil {
		return "", fmt.Errorf("decode version: %w", err)
	}
	if v == "" {
		return "", fmt.Errorf("decode version: no version string")
	}
	return v, nil
}
