package plan

// Name is the HTB backend's name in policies and output: the policy's
// knobs key.
const Name = "htb"
