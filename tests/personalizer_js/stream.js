// A ranking stream driven through Microsoft's JavaScript SDK (@azure/cognitiveservices-personalizer):
// `node stream.js <endpoint> <key> <stream.json>`; the file holds
// {"rounds": [{"context": {...}, "actions": [{"id", "features"}], "label": id}]}.
// Each round: rank (event id r<t>), reward 1 when the played id is the label, else 0.
// Prints {"rounds", "reward", "seconds"}: the progressive mean reward (exploration included).
// Used by benchmarks/ranking_personalizer_js.py.
"use strict";

const fs = require("fs");
const { PersonalizerClient } = require("@azure/cognitiveservices-personalizer");
const { CognitiveServicesCredentials } = require("@azure/ms-rest-azure-js");

async function main() {
  const [endpoint, key, path] = process.argv.slice(2);
  const { rounds } = JSON.parse(fs.readFileSync(path, "utf8"));
  const client = new PersonalizerClient(new CognitiveServicesCredentials(key), endpoint);
  const started = Date.now();
  let total = 0;
  for (let t = 0; t < rounds.length; t++) {
    const round = rounds[t];
    const ranked = await client.rank({
      contextFeatures: [round.context], actions: round.actions, eventId: `r${t}`,
    });
    const reward = ranked.rewardActionId === round.label ? 1 : 0;
    total += reward;
    await client.events.reward(ranked.eventId, { value: reward });
  }
  const seconds = (Date.now() - started) / 1000;
  console.log(JSON.stringify({ rounds: rounds.length, reward: total / rounds.length, seconds }));
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
