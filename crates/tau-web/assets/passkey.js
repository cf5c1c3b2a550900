// Passkeys on TauBar: enrolling one (/enroll#<secret>), signing in with one, and the
// passkey a lock-class question takes. The server runs every check (webauthn-rs); this
// file only turns its options into what the browser's WebAuthn calls take, and back.
"use strict";

const B64 = {
  toBytes(text) {
    const plain = text.replace(/-/g, "+").replace(/_/g, "/");
    const padded = plain + "===".slice((plain.length + 3) % 4);
    return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
  },
  fromBytes(buffer) {
    const bytes = new Uint8Array(buffer);
    let text = "";
    for (const b of bytes) text += String.fromCharCode(b);
    return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  },
};

async function passkeyPost(path, body) {
  const response = await fetch(path, {
    method: "POST",
    credentials: "same-origin",
    headers: { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
  return { status: response.status, data };
}

// The server's options for navigator.credentials.create.
function creationOptions(options) {
  const key = options.publicKey;
  key.challenge = B64.toBytes(key.challenge);
  key.user.id = B64.toBytes(key.user.id);
  for (const c of key.excludeCredentials || []) c.id = B64.toBytes(c.id);
  return { publicKey: key };
}

// The server's options for navigator.credentials.get.
function requestOptions(options) {
  const key = options.publicKey;
  key.challenge = B64.toBytes(key.challenge);
  for (const c of key.allowCredentials || []) c.id = B64.toBytes(c.id);
  return { publicKey: key };
}

function createdJson(credential) {
  return {
    id: credential.id,
    rawId: B64.fromBytes(credential.rawId),
    type: credential.type,
    response: {
      attestationObject: B64.fromBytes(credential.response.attestationObject),
      clientDataJSON: B64.fromBytes(credential.response.clientDataJSON),
    },
    extensions: credential.getClientExtensionResults(),
  };
}

function assertedJson(credential) {
  const response = credential.response;
  return {
    id: credential.id,
    rawId: B64.fromBytes(credential.rawId),
    type: credential.type,
    response: {
      authenticatorData: B64.fromBytes(response.authenticatorData),
      clientDataJSON: B64.fromBytes(response.clientDataJSON),
      signature: B64.fromBytes(response.signature),
      userHandle: response.userHandle ? B64.fromBytes(response.userHandle) : null,
    },
    extensions: credential.getClientExtensionResults(),
  };
}

// Enrolls a passkey with `secret`; resolves to the person's name, or throws what to say.
async function enrollPasskey(secret) {
  const started = await passkeyPost("/passkeys/enroll/start", { secret });
  if (started.status !== 200) throw new Error((started.data && started.data.error) || "could not start");
  const credential = await navigator.credentials.create(creationOptions(started.data.options));
  const finished = await passkeyPost("/passkeys/enroll/finish", {
    secret, ceremony: started.data.ceremony, credential: createdJson(credential),
  });
  if (finished.status !== 201) throw new Error((finished.data && finished.data.error) || "not enrolled");
  return finished.data.person;
}

// Signs in with a passkey; resolves when the session cookie is set, or throws.
async function signInWithPasskey() {
  const started = await passkeyPost("/passkeys/signin/start");
  if (started.status !== 200) throw new Error((started.data && started.data.error) || "could not start");
  const credential = await navigator.credentials.get(requestOptions(started.data.options));
  const finished = await passkeyPost("/passkeys/signin/finish", {
    ceremony: started.data.ceremony, credential: assertedJson(credential),
  });
  if (finished.status !== 204) throw new Error((finished.data && finished.data.error) || "not signed in");
}

// The assertion a question's `step_up` asks for: { ceremony, credential } for the answer.
async function stepUpAssertion(row) {
  const started = await passkeyPost(row.step_up.challenge);
  if (started.status !== 200) throw new Error((started.data && started.data.error) || "no challenge");
  const credential = await navigator.credentials.get(requestOptions(started.data.options));
  return { ceremony: started.data.ceremony, credential: assertedJson(credential) };
}

// The enrollment page.
document.addEventListener("DOMContentLoaded", () => {
  const enroll = document.getElementById("enroll");
  if (enroll) {
    const secret = location.hash.slice(1);
    // The secret never stays in the address bar or the history.
    history.replaceState(null, "", location.pathname);
    const said = document.getElementById("enroll-said");
    enroll.addEventListener("click", async () => {
      enroll.disabled = true;
      try {
        const person = await enrollPasskey(secret);
        said.textContent = `A passkey is enrolled for ${person}. You can close this page.`;
      } catch (error) {
        said.textContent = `No passkey was enrolled: ${error.message}`;
      }
    });
  }
  const signIn = document.getElementById("login-passkey");
  if (signIn) {
    signIn.addEventListener("click", async () => {
      try {
        await signInWithPasskey();
        start();
      } catch (error) {
        showLogin(`No passkey sign-in: ${error.message}`);
      }
    });
  }
});
