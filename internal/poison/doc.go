// Package poison finds text in a tool's definition that addresses the
// model rather than the person reading it: how a "poisoned" tool steers
// an agent. A tool's description and input schema go to the model
// verbatim, and a model follows instructions wherever it reads them, so a
// description that says "ignore previous instructions", asks for the
// contents of ~/.ssh, or hides words in characters no person sees is an
// attack on whoever offers the tool, whatever the tool does.
//
// Scan looks for four kinds (Kind), each a warning for the tool's owner,
// never a verdict (toolsrv validate prints them; nothing is refused):
//   - Hidden: characters a person does not see and a model reads:
//     Unicode tag characters (U+E0000–U+E007F, which spell ASCII
//     invisibly; the finding shows what they spell), zero-width
//     characters (U+200B, U+2060, U+FEFF past the start, U+180E,
//     U+2061–U+2064; a zero-width joiner or non-joiner beside an ASCII
//     character or in a run, where no script needs one), and variation
//     selectors in runs or from the supplement (U+E0100–U+E01EF), the
//     carriers of hidden payloads.
//   - Bidi: bidirectional controls (U+202A–U+202E, U+2066–U+2069,
//     U+200E, U+200F, U+061C), which make text read otherwise than it
//     shows.
//   - Imperative: words that give the model orders about its other
//     instructions or the user: "ignore (all) previous instructions" and
//     its kin (disregard, forget; prior, above, earlier, preceding),
//     "do not tell the user", "without telling the user", "you are now",
//     "new instructions", and the mock markup of published poisoning
//     attacks (<IMPORTANT>, <SYSTEM>, <instructions>).
//   - Secret: requests for secrets: a credential file or directory
//     (~/.ssh, id_rsa and its kin, .env, .aws/credentials, .netrc,
//     .pgpass, .git-credentials, .npmrc, .pypirc, .kube/config,
//     .docker/config.json, .gnupg, /etc/shadow), or a verb that moves
//     data (read, send, pass, include, share, paste, upload, forward,
//     attach, copy, leak) a few words before a secret (API key, token,
//     password, passphrase, private key, credentials, cookie).
//
// The rules were written from the published attacks (tool poisoning,
// ASCII smuggling with Unicode tags) and checked against openly licensed
// tool descriptions for false alarms; they are a net, not a proof: text
// that passes can still steer a model, which is why imported tools are
// also pinned (package mcp).
package poison
