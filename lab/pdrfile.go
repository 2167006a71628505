package lab

import (
	"bytes"
	"fmt"
	"net/netip"

	"gopkg.in/yaml.v3"

	"github.com/free5gc/gtpqos/internal/yamlerr"
	"github.com/free5gc/gtpqos/shaper"
)

// pdrYAML is one row of a lab PDR table file.
// Integers are read as strings and parsed with shaper.ParseUint (decimal,
// 0x or 0o): yaml.v3 would read a zero-padded "010" as octal 8.
type pdrYAML struct {
	Name    string  `yaml:"name"`
	SEID    string  `yaml:"seid"`
	QER     string  `yaml:"qer"`
	UE      string  `yaml:"ue"`
	DN      string  `yaml:"dn"`
	UEPort  string  `yaml:"ue_port"`
	TEID    string  `yaml:"teid"`
	QFI     string  `yaml:"qfi"`
	Mark    string  `yaml:"mark"`
	Offered float64 `yaml:"offered"`
}

// ints parses the row's integer fields.
func (p pdrYAML) ints(pdr *PDR) error {
	for _, f := range []struct {
		name string
		s    string
		bits int
		set  func(uint64)
	}{
		{"seid", p.SEID, 64, func(v uint64) { pdr.SEID = v }},
		{"qer", p.QER, 32, func(v uint64) { pdr.QERID = uint32(v) }},
		{"ue_port", p.UEPort, 16, func(v uint64) { pdr.UEPort = uint16(v) }},
		{"teid", p.TEID, 32, func(v uint64) { pdr.TEID = uint32(v) }},
		{"qfi", p.QFI, 8, func(v uint64) { pdr.QFI = uint8(v) }},
		{"mark", p.Mark, 32, func(v uint64) { pdr.Mark = uint32(v) }},
	} {
		if f.s == "" {
			continue
		}
		v, err := shaper.ParseUint(f.s, f.bits)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		f.set(v)
	}
	return nil
}

// pdrsYAML is a lab PDR table file.
type pdrsYAML struct {
	PDRs []*pdrYAML `yaml:"pdrs"` // pointers: a null row is an error, not dropped
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
	data, err := shaper.ReadBounded(path, shaper.MaxFlowsFileSize)
	if err != nil {
		return nil, fmt.Errorf("lab pdrs %w", err)
	}
	var doc pdrsYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, yamlerr.OneLine("lab pdrs "+path, err, yamlWhere)
	}
	if err := yamlerr.OneDocument("lab pdrs "+path, dec); err != nil {
		return nil, err
	}
	var out []PDR
	for i, p := range doc.PDRs {
		if p == nil {
			return nil, fmt.Errorf("lab pdrs %s: pdr %d: empty entry (null)", path, i)
		}
		pdr := PDR{Name: p.Name, Offered: p.Offered}
		if err := p.ints(&pdr); err != nil {
			return nil, fmt.Errorf("lab pdrs %s: pdr %d (%s): %w", path, i, p.Name, err)
		}
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
