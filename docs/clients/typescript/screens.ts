// What an app written in TypeScript does with the generated documents: each operation's variables and
// result are typed from the schema, so a renamed field or a missing userErrors branch fails to compile.
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import {
  CreateTaskDocument,
  DecideReviewDocument,
  HomeDocument,
  SignUpDocument,
} from "../generated/graphql";
import type {
  CreateTaskMutation,
  CreateTaskMutationVariables,
  HomeQuery,
  SignUpMutation,
} from "../generated/graphql";

// any client's `request` has this shape (Apollo's client.mutate, urql's client.mutation, fetch)
export type Request = <Result, Variables>(
  document: TypedDocumentNode<Result, Variables>,
  variables: Variables,
) => Promise<Result>;

export type FieldErrors = Record<string, string>;

/** userErrors keyed by the input field a form shows them beside. */
export function fieldErrors(errors: ReadonlyArray<{ field?: ReadonlyArray<string> | null; message: string }>): FieldErrors {
  const shown: FieldErrors = {};
  for (const error of errors) {
    shown[(error.field ?? []).slice(1).join(".") || "form"] = error.message;
  }
  return shown;
}

export async function signUp(request: Request, email: string, password: string): Promise<string | FieldErrors> {
  const answer: SignUpMutation = await request(SignUpDocument, {
    input: { email, password, displayName: email.split("@")[0], timezone: "Europe/Berlin" },
  });
  const { token, userErrors } = answer.accountRegister;
  return token ?? fieldErrors(userErrors);
}

export async function createDailyRun(request: Request, startsAt: string): Promise<string | FieldErrors> {
  const variables: CreateTaskMutationVariables = {
    input: {
      title: "Run",
      method: "PHOTO",
      schedule: { startsAt, rrule: "FREQ=DAILY", timezone: "Europe/Berlin" },
      clientMutationId: "create-run",
    },
  };
  const answer: CreateTaskMutation = await request(CreateTaskDocument, variables);
  const created = answer.taskCreate.task;
  return created ? created.id : fieldErrors(answer.taskCreate.userErrors);
}

export async function dueToday(request: Request, from: string, to: string): Promise<string[]> {
  const home: HomeQuery = await request(HomeDocument, { from, to });
  return home.agenda.edges.map((edge) => `${edge.node.task.title} due ${edge.node.dueAt} (${edge.node.status})`);
}

export async function approve(request: Request, verificationId: string): Promise<string> {
  const answer = await request(DecideReviewDocument, { input: { verificationId, approve: true } });
  const [refused] = answer.reviewDecide.userErrors;
  // JUDGED_BY_METHOD: the method judged it on arrival; the owner may appeal a rejection instead
  return refused ? `${refused.reason ?? refused.code}: ${refused.message}` : answer.reviewDecide.verification?.status ?? "";
}
