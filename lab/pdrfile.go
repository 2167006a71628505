package lab

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"

	"gopkg.in/yaml.v3"

	"github.com/free5gc/gtpqos/internal/yamlerr"
)

// pdrYAML is one row of a lab PDR table file.
type pdrYAML struct {
	Name    string  `yaml:"name"`
	SEID    uint64  `yaml:"seid"`
	QER     uint32  `yaml:"qer"`
	UE      string  `yaml:"ue"`
	DN      string  `yaml:"dn"`
	UEPort  uint16  `yaml:"ue_port"`
	TEID    uint32  `yaml:"teid"`
	QFI     uint8   `yaml:"qfi"`
	Mark    uint32  `yaml:"mark"`
	Offered float64 `yaml:"offered"`
}

// pdrsYAML is a lab PDR table file.
type pdrsYAML struct {
	PDRs []pdrYAML `yaml:"pdrs"`
}

// yamlWhere says where the file's types sit, for unknown keys.
var yamlWhere = map[string]string{"pdrsYAML": "at top level", "pdrYAML": "in a pdr"}

// LoadPDRs reads a lab PDR table from a YAML file:
//
//	pdrs:
//	  - {name: UE1, seid: 1, qer: 1, ue: 10.60.0.1, dn: "192.168.100.2:5201",
//	     ue_port: 5201, teid: 100, qfi: 2, mark: 0x10002}
//
// offered (bit/s) is optional. The table is validated (ValidatePDRs).
func LoadPDRs(path string) ([]PDR, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("lab pdrs: %w", err)
	}
	var doc pdrsYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, yamlerr.OneLine("lab pdrs "+path, err, yamlWhere)
	}
	var out []PDR
	for i, p := range doc.PDRs {
		pdr := PDR{Name: p.Name, SEID: p.SEID, QERID: p.QER, UEPort: p.UEPort, TEID: p.TEID, QFI: p.QFI, Mark: p.Mark, Offered: p.Offered}
		if pdr.UE, err = netip.ParseAddr(p.UE); err != nil {
			return nil, fmt.Errorf("lab pdrs %s: pdr %d (%s): ue: %w", path, i, p.Name, err)
		}
		if pdr.DN, err = netip.ParseAddrPort(p.DN); err != nil {
			return nil, fmt.Errorf("lab pdrs %s: pdr %d (%s): dn: %w", path, i, p.Name, err)
		}
		out = append(out, pdr)
	}
	if err := ValidatePDRs(out); err != nil {
		return nil, fmt.Errorf("lab pdrs %s: %w", path, err)
	}
	return out, nil
}
