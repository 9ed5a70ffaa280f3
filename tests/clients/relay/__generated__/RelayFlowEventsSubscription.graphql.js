/**
 * @generated SignedSource<<9d01cdbcb766aa8b22aee6a35ca9362a>>
 * @lightSyntaxTransform
 */

/* eslint-disable */

'use strict';

var node = (function(){
var v0 = [
  {
    "defaultValue": null,
    "kind": "LocalArgument",
    "name": "after"
  }
],
v1 = {
  "alias": null,
  "args": null,
  "kind": "ScalarField",
  "name": "id",
  "storageKey": null
},
v2 = [
  (v1/*:: as any*/)
],
v3 = [
  {
    "alias": null,
    "args": [
      {
        "kind": "Variable",
        "name": "after",
        "variableName": "after"
      }
    ],
    "concreteType": "VerificationEvent",
    "kind": "LinkedField",
    "name": "verificationEvents",
    "plural": false,
    "selections": [
      (v1/*:: as any*/),
      {
        "alias": null,
        "args": null,
        "kind": "ScalarField",
        "name": "type",
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "concreteType": "Verification",
        "kind": "LinkedField",
        "name": "verification",
        "plural": false,
        "selections": (v2/*:: as any*/),
        "storageKey": null
      },
      {
        "alias": null,
        "args": null,
        "concreteType": "Task",
        "kind": "LinkedField",
        "name": "task",
        "plural": false,
        "selections": (v2/*:: as any*/),
        "storageKey": null
      }
    ],
    "storageKey": null
  }
];
return {
  "fragment": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Fragment",
    "metadata": null,
    "name": "RelayFlowEventsSubscription",
    "selections": (v3/*:: as any*/),
    "type": "Subscription",
    "abstractKey": null
  },
  "kind": "Request",
  "operation": {
    "argumentDefinitions": (v0/*:: as any*/),
    "kind": "Operation",
    "name": "RelayFlowEventsSubscription",
    "selections": (v3/*:: as any*/)
  },
  "params": {
    "cacheID": "3fd695a1505818aa9404ba7a65d9c30e",
    "id": null,
    "metadata": {},
    "name": "RelayFlowEventsSubscription",
    "operationKind": "subscription",
    "text": "subscription RelayFlowEventsSubscription(\n  $after: ID\n) {\n  verificationEvents(after: $after) {\n    id\n    type\n    verification {\n      id\n    }\n    task {\n      id\n    }\n  }\n}\n"
  }
};
})();

node.hash = "317b8e8d6a1e3b2334e2d98176f63eba";

module.exports = node;
