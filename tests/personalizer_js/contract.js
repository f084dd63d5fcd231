// Every operation of Microsoft's JavaScript Personalizer clients, unchanged, against the
// endpoint and key given: `node contract.js <endpoint> <key>`.
//
// @azure/cognitiveservices-personalizer 2.0.1 (rank, events.reward, events.activate;
// URLs {Endpoint}/personalizer/v1.0/...) and @azure-rest/ai-personalizer 1.0.0-beta.1
// (every route of v1.1-preview.3). Prints one JSON line per operation,
// {client, operation, status, body}, for tests/service/test_personalizer_js.py to check;
// exits 1 when an SDK call throws something other than the service's own error answer.
"use strict";

const { PersonalizerClient } = require("@azure/cognitiveservices-personalizer");
const { CognitiveServicesCredentials } = require("@azure/ms-rest-azure-js");
const createPersonalizerClient = require("@azure-rest/ai-personalizer").default;
const { AzureKeyCredential } = require("@azure/core-auth");

const [endpoint, key] = process.argv.slice(2);
if (!endpoint || !key) {
  console.error("usage: node contract.js <endpoint> <key>");
  process.exit(2);
}

const actions = [
  { id: "pasta", features: [{ cuisine: "italian" }, { spice: 1 }] },
  { id: "tacos", features: [{ cuisine: "mexican" }, { spice: 3 }] },
  { id: "salad", features: [{ cuisine: "greek" }, { spice: 0 }] },
];

function report(client, operation, status, body) {
  console.log(JSON.stringify({ client, operation, status: Number(status), body: body ?? null }));
}

async function legacy() {
  // the README's way: CognitiveServicesCredentials sends Ocp-Apim-Subscription-Key
  const client = new PersonalizerClient(new CognitiveServicesCredentials(key), endpoint);
  const ranked = await client.rank({
    contextFeatures: [{ user: { name: "ann" } }, { time: "noon" }],
    actions,
    excludedActions: ["salad"],
    eventId: "js-legacy-1",
  });
  report("cognitiveservices", "rank", ranked._response.status, {
    eventId: ranked.eventId,
    rewardActionId: ranked.rewardActionId,
    ranking: ranked.ranking,
  });
  const rewarded = await client.events.reward(ranked.eventId, { value: 1 });
  report("cognitiveservices", "events.reward", rewarded._response.status);
  const deferred = await client.rank({ actions, deferActivation: true, eventId: "js-legacy-2" });
  const activated = await client.events.activate(deferred.eventId);
  report("cognitiveservices", "events.activate", activated._response.status);
  try {
    await client.events.reward("js-never-ranked", { value: 1 });
    report("cognitiveservices", "events.reward (unknown event)", 204);
  } catch (err) {
    report("cognitiveservices", "events.reward (unknown event)", err.statusCode, err.body);
  }
}

async function rest() {
  const client = createPersonalizerClient(endpoint, new AzureKeyCredential(key));
  const call = async (operation, pending) => {
    const answer = await pending;
    const body = answer.body instanceof Uint8Array ? { bytes: answer.body.length } : answer.body;
    report("rest", operation, answer.status, body);
    return answer;
  };
  const ranked = await call("rank", client.path("/rank").post({
    body: { contextFeatures: [{ user: { name: "bob" } }], actions, eventId: "js-rest-1" },
  }));
  await call("events.reward", client.path("/events/{eventId}/reward", ranked.body.eventId)
    .post({ body: { value: 0.5 } }));
  await client.path("/rank").post({ body: { actions, eventId: "js-rest-2", deferActivation: true } });
  await call("events.activate", client.path("/events/{eventId}/activate", "js-rest-2").post());
  const slots = [
    { id: "main", features: [{ size: "large" }], baselineAction: "pasta" },
    { id: "side", features: [{ size: "small" }], baselineAction: "salad" },
  ];
  const multi = await call("multislot.rank", client.path("/multislot/rank").post({
    body: { contextFeatures: [{ user: { name: "bob" } }], actions, slots, deferActivation: true },
  }));
  await call("multislot.events.activate",
    client.path("/multislot/events/{eventId}/activate", multi.body.eventId).post());
  await call("multislot.events.reward",
    client.path("/multislot/events/{eventId}/reward", multi.body.eventId)
      .post({ body: { reward: [{ slotId: "main", value: 1 }, { slotId: "side", value: 0 }] } }));

  const service = await call("configurations.service.get",
    client.path("/configurations/service").get());
  await call("configurations.service.put",
    client.path("/configurations/service").put({ body: { ...service.body, explorationPercentage: 10 } }));
  await call("configurations.policy.get", client.path("/configurations/policy").get());
  await call("configurations.policy.put", client.path("/configurations/policy")
    .put({ body: { name: "squarecb", arguments: "--cb_explore_adf --squarecb --gamma_scale 20" } }));
  await call("configurations.policy.delete", client.path("/configurations/policy").delete());

  const now = new Date();
  const created = await call("evaluations.create", client.path("/evaluations").post({
    body: {
      name: "js-evaluation",
      startTime: new Date(now.getTime() - 3600e3).toISOString(),
      endTime: new Date(now.getTime() + 3600e3).toISOString(),
      policies: [{ name: "greedy", arguments: "--cb_explore_adf --epsilon 0" }],
    },
  }));
  const id = created.body.id;
  let evaluation = created;
  for (let i = 0; i < 600 && !["completed", "failed"].includes(evaluation.body.status); i++) {
    await new Promise((done) => setTimeout(done, 100));
    evaluation = await client.path("/evaluations/{evaluationId}", id).get();
  }
  report("rest", "evaluations.get", evaluation.status, evaluation.body);
  await call("evaluations.list", client.path("/evaluations").get());
  await call("configurations.applyFromEvaluation", client.path("/configurations/applyFromEvaluation")
    .post({ body: { evaluationId: id, policyName: "greedy" } }));
  await call("evaluations.delete", client.path("/evaluations/{evaluationId}", id).delete());

  await call("logs.properties", client.path("/logs/properties").get());
  await call("model.properties", client.path("/model/properties").get());
  // a binary answer is read as a stream (the REST client's way for octet-stream bodies)
  const streamed = await client.path("/model").get().asNodeStream();
  const chunks = [];
  for await (const chunk of streamed.body) chunks.push(chunk);
  const exported = Buffer.concat(chunks);
  report("rest", "model.get", streamed.status, { bytes: exported.length });
  await call("model.put", client.path("/model").put({
    contentType: "application/octet-stream", body: exported,
  }));
  await call("logs.interactions", client.path("/logs/interactions").post({
    contentType: "application/octet-stream", body: new Uint8Array([1, 2, 3]),
  }));
  await call("logs.observations", client.path("/logs/observations").post({
    contentType: "application/octet-stream", body: new Uint8Array([1, 2, 3]),
  }));
  await call("logs.delete", client.path("/logs").delete());
  await call("model.delete", client.path("/model").delete());
}

async function main() {
  const which = process.env.CONTRACT_CLIENTS || "cognitiveservices,rest";
  if (which.includes("cognitiveservices")) await legacy();
  if (which.includes("rest")) await rest();
}

main().catch((err) => {
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});
