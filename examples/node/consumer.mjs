// A downstream service in JavaScript: a durable JetStream consumer of one
// product type on the receiver's stream, with the official NATS client
// (@nats-io/transport-node, @nats-io/jetstream). It prints the product's
// name, S3 path and download URL, read from the headers the receiver set
// (no JSON parsing), and acknowledges each message after printing it.
//
//   npm ci
//   NATS_URL=nats://127.0.0.1:4222 PRODUCT_TYPE=S2MSI2A node consumer.mjs
//
// Settings (environment):
//   NATS_URL       the receiver's NATS (default nats://127.0.0.1:4222)
//   NATS_USER, NATS_PASSWORD   a consumer login, if the server wants one
//   STREAM         the receiver's NATS_STREAM (default CDSE_PRODUCTS)
//   SUBJECT        filter subject (default cdse.product.created.*.<PRODUCT_TYPE>)
//   PRODUCT_TYPE   product type of the default subject (default S2MSI2A)
//   INTEREST       a named interest of the receiver (INTERESTS_FILE): the
//                  default subject is then cdse.interest.<INTEREST>.> (every
//                  event routed to it; INTEREST_PREFIX for another prefix)
//   DURABLE        consumer name, kept by the server across restarts
//   COUNT          stop after this many messages (default: run until killed)
import { connect } from "@nats-io/transport-node";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";

const env = process.env;
const stream = env.STREAM || "CDSE_PRODUCTS";
const productType = env.PRODUCT_TYPE || "S2MSI2A";
const interest = env.INTEREST || "";
const subject = env.SUBJECT ||
  (interest ? `${env.INTEREST_PREFIX || "cdse.interest"}.${interest}.>` : `cdse.product.created.*.${productType}`);
const durable = env.DURABLE || (interest ? `pipeline-${interest}` : `downloader-${productType}`).replace(/[^A-Za-z0-9_-]/g, "_");
const count = Number(env.COUNT || 0);

const nc = await connect({
  servers: env.NATS_URL || "nats://127.0.0.1:4222",
  user: env.NATS_USER,
  pass: env.NATS_PASSWORD,
});

// Create the durable consumer, or update its filter if it exists: the
// server remembers what it acknowledged, so a restart resumes there.
const jsm = await jetstreamManager(nc);
await jsm.consumers.add(stream, {
  durable_name: durable,
  filter_subject: subject,
  ack_policy: AckPolicy.Explicit,
  deliver_policy: DeliverPolicy.All,
  max_ack_pending: 100,
});

const consumer = await jetstream(nc).consumers.get(stream, durable);
const messages = await consumer.consume({ max_messages: 100 });
let seen = 0;
for await (const m of messages) {
  const h = m.headers;
  console.log([
    ...(interest ? [h?.get("Cdse-Interest")] : []),
    h?.get("Cdse-Event"),
    h?.get("Cdse-Product-Name") || "-",
    h?.get("Cdse-S3-Path") || "-",
    h?.get("Cdse-Download-Url") || "-",
  ].join(" "));
  // Acknowledge after the work is done (here: printing): a consumer that
  // dies before it gets the message again.
  await m.ackAck();
  if (count > 0 && ++seen >= count) {
    break;
  }
}
await nc.drain();
