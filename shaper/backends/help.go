package backends

import "github.com/free5gc/gtpqos/shaper/classify"

// Choices returns the values the default backend's knob takes, in a few
// words for a flag's help ("auto, fw, bpf or gtpu" for HTB's classifier),
// or "KIND" for a knob it does not list.
func Choices(knob string) string {
	b, err := lookup("")
	if err != nil || b.choices[knob] == "" {
		return "KIND"
	}
	return b.choices[knob]
}

// SetPinRoot sets where the backends' BPF classifiers are pinned (a bpffs
// directory, for every device); "" restores the default.
func SetPinRoot(dir string) { classify.SetPinRoot(dir) }
