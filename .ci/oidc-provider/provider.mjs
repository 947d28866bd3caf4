// A certified OpenID Provider (panva/node-oidc-provider) for the sign-in test in CI: one
// confidential client and one user with a verified e-mail address. Everything comes from the
// environment, so `.ci/oidc` and the test agree on it:
//   OIDC_PROVIDER_PORT      where to listen (on 127.0.0.1; the issuer is http://localhost:PORT)
//   OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI   the service's client registration
//   OIDC_USER_LOGIN, OIDC_USER_EMAIL   the one account (any password is accepted: the provider's
//                                      built-in login page, which is for development, checks none)
import { generateKeyPairSync } from 'node:crypto';
import Provider from 'oidc-provider';

const env = (name) => {
  const value = process.env[name];
  if (!value) {
    console.error(`${name} is not set`);
    process.exit(2);
  }
  return value;
};

const port = Number(env('OIDC_PROVIDER_PORT'));
const login = env('OIDC_USER_LOGIN');
const email = env('OIDC_USER_EMAIL');

// Fresh signing keys on every start, as the service must find them through the JWKS: one RSA
// key (RS256, the default ID-token algorithm) and one P-256 key.
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });

const provider = new Provider(`http://localhost:${port}`, {
  clients: [{
    client_id: env('OIDC_CLIENT_ID'),
    client_secret: env('OIDC_CLIENT_SECRET'),
    redirect_uris: [env('OIDC_REDIRECT_URI')],
    grant_types: ['authorization_code'],
    response_types: ['code'],
    token_endpoint_auth_method: 'client_secret_basic',
  }],
  jwks: { keys: [{ ...rsa, kid: 'ci-rsa', use: 'sig', alg: 'RS256' }, { ...ec, kid: 'ci-ec', use: 'sig', alg: 'ES256' }] },
  claims: {
    openid: ['sub'],
    email: ['email', 'email_verified'],
    profile: ['name'],
  },
  // The service reads the user's claims from the ID token, as Google, Entra ID and Keycloak
  // put them there; by default this provider would keep them for the userinfo endpoint.
  conformIdTokenClaims: false,
  async findAccount(_ctx, sub) {
    if (sub !== login) return undefined;
    return {
      accountId: sub,
      async claims() {
        return { sub, email, email_verified: true, name: 'CI User' };
      },
    };
  },
});
// Plain http on localhost is for this test only.
provider.proxy = false;

provider.listen(port, '127.0.0.1', () => {
  console.log(`oidc-provider listening, issuer http://localhost:${port}`);
});
